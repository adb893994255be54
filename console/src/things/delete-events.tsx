import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { TextField } from '../components/field.tsx';
import { countOf, showTime } from '../format.ts';
import type { Thing } from './thing-form.tsx';

/** Epoch seconds of a `datetime-local` value, read in the browser's (the user's) time zone. */
const secondsOf = (local: string): number | undefined => {
  const ms = new Date(local).getTime();
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
};

/**
 * Deletes the thing's events in a range (`DELETE /api/v3/things/:thing_key/events`, docs/api.md,
 * "Deleting events"): `From` and `To` in the user's time zone, then a dialog naming the thing and the
 * range. `To` takes in its whole minute, as the picker shows minutes.
 */
export function DeleteEvents({
  thing,
  onDone,
  onDeleted,
}: {
  thing: Thing;
  onDone: () => void;
  onDeleted: () => void;
}) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [deleted, setDeleted] = useState<number | undefined>();
  const start = secondsOf(from);
  const end = secondsOf(to);
  const ready = start !== undefined && end !== undefined;
  return (
    <section class="panel" aria-label="Delete events">
      <h2>Delete events</h2>
      <p class="muted">Times are in your time zone ({Intl.DateTimeFormat().resolvedOptions().timeZone}).</p>
      {/* Side by side, apart, as a list's filters are: the panel is no form to space its fields. */}
      <div class="filters">
        <TextField label="From" type="datetime-local" value={from} onInput={setFrom} />
        <TextField label="To" type="datetime-local" value={to} onInput={setTo} />
      </div>
      {deleted !== undefined && <p role="status">{countOf(deleted, 'event')} deleted.</p>}
      <div class="actions">
        {ready ? (
          <ConfirmButton
            label="Delete events"
            title={`Delete events of ${thing.name}?`}
            question={
              <>
                Every event of <strong>{thing.name}</strong> from {showTime(start)} to {showTime(end + 59)} is deleted.
                This cannot be undone.
              </>
            }
            onConfirm={async () => {
              const answered = await answer(
                api.DELETE('/api/v3/things/{thing_key}/events', {
                  params: { path: { thing_key: thing.thing_key }, query: { from: start, to: end + 59 } },
                }),
              );
              setDeleted(answered.deleted);
              onDeleted();
            }}
          />
        ) : (
          <button type="button" class="danger" disabled>
            Delete events
          </button>
        )}
        <button type="button" class="secondary" onClick={onDone}>
          Close
        </button>
      </div>
    </section>
  );
}
