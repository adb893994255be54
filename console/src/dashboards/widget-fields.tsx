/**
 * Fields of the widget form (widget-form.tsx) made of several controls: a value's thresholds, each a
 * value and a colour chosen with the browser's colour picker (a new one's colour chosen for it), and the
 * alert statuses an alerts widget lists.
 */
import { useId } from 'preact/hooks';
import { TextField } from '../components/field.tsx';
import { ALERT_STATUSES, MAX_THRESHOLDS, type Problems, thresholdColourFor, type WidgetDraft } from './widget-draft.ts';

const STATUS_NAMES: Record<string, string> = { open: 'Open', acknowledged: 'Acknowledged', cleared: 'Cleared' };

/** Thresholds, each a value and the colour the figure takes from it up; a new one's colour is chosen for it. */
export function ThresholdsField(props: {
  thresholds: WidgetDraft['thresholds'];
  problems: Problems;
  onChange: (thresholds: WidgetDraft['thresholds']) => void;
}) {
  const { thresholds, problems } = props;
  const set = (index: number, change: Partial<WidgetDraft['thresholds'][number]>) =>
    props.onChange(thresholds.map((t, i) => (i === index ? { ...t, ...change } : t)));
  return (
    <fieldset class="thresholds">
      <legend>Thresholds</legend>
      <p class="hint">The value is shown in the colour of the highest threshold at or below it.</p>
      {thresholds.map((threshold, i) => (
        <fieldset key={i} class="threshold" aria-label={`Threshold ${i + 1}`}>
          <TextField
            label="From"
            type="number"
            step="any"
            value={threshold.from}
            onInput={(from) => set(i, { from })}
            error={problems[`thresholds.${i}.from`]}
          />
          <TextField
            label="Colour"
            type="color"
            value={threshold.color}
            onInput={(color) => set(i, { color })}
            error={problems[`thresholds.${i}.color`]}
          />
          <button
            type="button"
            class="secondary"
            aria-label={`Remove threshold ${i + 1}`}
            onClick={() => props.onChange(thresholds.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </fieldset>
      ))}
      {thresholds.length < MAX_THRESHOLDS && (
        <button
          type="button"
          class="secondary"
          onClick={() => props.onChange([...thresholds, { from: '', color: thresholdColourFor(thresholds.length) }])}
        >
          Add threshold
        </button>
      )}
    </fieldset>
  );
}

/** The alert statuses an alerts widget lists. */
export function StatusesField(props: {
  status: string[];
  problem: string | undefined;
  onChange: (status: string[]) => void;
}) {
  const problemId = useId();
  return (
    <fieldset class="statuses">
      <legend>Statuses</legend>
      {ALERT_STATUSES.map((status) => (
        <label key={status} class="check">
          <input
            type="checkbox"
            checked={props.status.includes(status)}
            aria-invalid={props.problem ? true : undefined}
            aria-describedby={props.problem ? problemId : undefined}
            onChange={(e) =>
              props.onChange(
                e.currentTarget.checked ? [...props.status, status] : props.status.filter((s) => s !== status),
              )
            }
          />
          {STATUS_NAMES[status]}
        </label>
      ))}
      {props.problem && (
        <small id={problemId} class="error" role="alert">
          {props.problem}
        </small>
      )}
    </fieldset>
  );
}
