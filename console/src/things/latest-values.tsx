import type { ComponentChildren } from 'preact';
import { BreakableName } from '../components/name-breaks.tsx';
import { cutText, showTime, showValue } from '../format.ts';

/**
 * Events of the last hour read for the latest values: enough for every metric a device sends along,
 * few enough that a crowded hour costs no more than a quiet one (docs/console.md).
 */
export const LATEST_EVENTS = 1_000;

/** thing_data's answer in the default format: the events of each thing. */
export type EventsAnswer = Record<string, { event_data: { timestamp: number; data: Record<string, unknown> }[] }>;

/**
 * A value longer than this is shown cut, with how long it is: a device's log line of 20,000 characters
 * would push the chart and alerts pages down. The events' export and the API have it whole.
 */
const LONGEST_SHOWN = 300;

/** A value as shown, and its whole length in characters when it was cut. */
function shownValue(value: unknown): { text: string; cut?: number } {
  const text = showValue(value);
  return text.length > LONGEST_SHOWN ? { text: cutText(text, LONGEST_SHOWN), cut: text.length } : { text };
}

/** The newest value of each (top-level) metric, with the time of the event that carried it. */
export type Latest = Record<string, { value: unknown; timestamp: number }>;

/** Takes an event's values into `latest`, each only where it is at least as new as the one shown. */
export function mergeLatest(latest: Latest, timestamp: unknown, data: unknown): Latest {
  if (typeof timestamp !== 'number' || !data || typeof data !== 'object') return latest;
  let merged = latest;
  for (const [metric, value] of Object.entries(data)) {
    const shown = merged[metric];
    if (shown && shown.timestamp > timestamp) continue;
    if (merged === latest) merged = { ...latest };
    merged[metric] = { value, timestamp };
  }
  return merged;
}

/**
 * The newest values, each with its metric's unit where the thing's template gives one; `nextStep` follows
 * `No event yet.` (how a device sends its first).
 */
export function LatestValues({
  latest,
  units = {},
  nextStep,
}: {
  latest: Latest;
  units?: Record<string, string>;
  nextStep?: ComponentChildren;
}) {
  const names = Object.keys(latest).sort();
  const newest = Math.max(...names.map((name) => latest[name]?.timestamp ?? 0));
  return (
    <section class="panel" aria-labelledby="latest-values">
      <h2 id="latest-values">Latest values</h2>
      {names.length === 0 ? (
        <p>No event yet.{nextStep && <> {nextStep}</>}</p>
      ) : (
        <>
          <dl class="values">
            {names.map((name) => {
              const shown = latest[name];
              const value = shownValue(shown?.value);
              return (
                <>
                  <dt>
                    <BreakableName name={name} />
                  </dt>
                  <dd>
                    <span>{value.text}</span>
                    {units[name] && <span class="unit"> {units[name]}</span>}
                    {value.cut !== undefined && (
                      <small class="muted">
                        {' '}
                        (the first {LONGEST_SHOWN} of {value.cut.toLocaleString()} characters)
                      </small>
                    )}
                    {/* A metric the newest event did not carry says when it was sent. */}
                    {shown && shown.timestamp !== newest && <small> at {showTime(shown.timestamp)}</small>}
                  </dd>
                </>
              );
            })}
          </dl>
          <p>
            <small>at {showTime(newest)}</small>
          </p>
        </>
      )}
    </section>
  );
}
