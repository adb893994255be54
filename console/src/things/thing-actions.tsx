import { useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import { allows, useCaller } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { navigate } from '../router.tsx';
import { DeleteEvents } from './delete-events.tsx';
import { type Thing, ThingForm } from './thing-form.tsx';

type Format = 'ndjson' | 'csv';
/** How an export writes its times: `yyyy/mm/dd hh:mm:ss` in the browser's time zone, or epoch seconds. */
type Timestamps = 'str' | 'int';

/**
 * The browser's time zone, in which the console shows every time; UTC when the browser does not know
 * its own (`Etc/Unknown`, which the server refuses, as it refuses any name it does not know).
 */
const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
const BROWSER_ZONE = zone && zone !== 'Etc/Unknown' ? zone : 'UTC';

/**
 * Downloads the thing's events (`GET /api/v3/things/:thing_key/events/export`, docs/api.md, "Exporting
 * events"): fetched with the token in its header, as every call is, and saved from a blob, so that no
 * URL ever carries the token.
 */
async function exportEvents(thingKey: string, format: Format, timestamps: Timestamps): Promise<void> {
  const time = timestamps === 'str' ? { timestamp_format: 'str' as const, time_zone: BROWSER_ZONE } : {};
  const blob = await answer(
    api.GET('/api/v3/things/{thing_key}/events/export', {
      params: { path: { thing_key: thingKey }, query: { format, ...time } },
      parseAs: 'blob',
    }),
  );
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `${thingKey}-events.${format === 'csv' ? 'csv' : 'ndjson'}`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

/**
 * What may be done to a thing, as its role allows: Edit, Delete, Export and Delete events (the last two
 * once the thing has an event: before, there is nothing to export or delete).
 */
export function ThingActions({
  thing,
  hasEvents,
  onChanged,
  onEventsDeleted,
}: {
  thing: Thing;
  /** Whether the thing has a stored event (its `last_event`). */
  hasEvents: boolean;
  onChanged: () => void;
  /** Events of the thing were deleted: what the page shows of them is read again. */
  onEventsDeleted: () => void;
}) {
  const caller = useCaller();
  const [panel, setPanel] = useState<'edit' | 'export' | 'delete-events' | undefined>();
  const [exportError, setExportError] = useState<string | undefined>();
  const [timestamps, setTimestamps] = useState<Timestamps>('str');
  const toggle = (next: typeof panel) => setPanel(panel === next ? undefined : next);
  const download = async (format: Format) => {
    setExportError(undefined);
    try {
      await exportEvents(thing.thing_key, format, timestamps);
    } catch (failure) {
      setExportError(messageOf(failure));
    }
  };
  return (
    <>
      <div class="actions">
        {allows(caller, 'thing', 'update') && (
          <button type="button" class="secondary" aria-expanded={panel === 'edit'} onClick={() => toggle('edit')}>
            Edit
          </button>
        )}
        {allows(caller, 'data', 'read') && (hasEvents || panel === 'export') && (
          <button type="button" class="secondary" aria-expanded={panel === 'export'} onClick={() => toggle('export')}>
            Export
          </button>
        )}
        {allows(caller, 'data', 'delete') && (hasEvents || panel === 'delete-events') && (
          <button
            type="button"
            class="secondary"
            aria-expanded={panel === 'delete-events'}
            onClick={() => toggle('delete-events')}
          >
            Delete events
          </button>
        )}
        {allows(caller, 'thing', 'delete') && (
          <ConfirmButton
            label="Delete"
            title={`Delete ${thing.name}?`}
            question={
              <>
                The thing <strong>{thing.name}</strong> (<code>{thing.thing_key}</code>) is deleted with all its events,
                and leaves its static groups.
              </>
            }
            onConfirm={async () => {
              await answer(
                api.DELETE('/api/v3/things/{thing_key}', { params: { path: { thing_key: thing.thing_key } } }),
              );
              navigate('things');
            }}
          />
        )}
      </div>
      {panel === 'edit' && (
        <ThingForm
          thing={thing}
          onDone={(saved) => {
            setPanel(undefined);
            if (saved) onChanged();
          }}
        />
      )}
      {panel === 'export' && (
        <section class="panel" aria-label="Export">
          <h2>Export</h2>
          <p>Every event of the thing, oldest first, as a file.</p>
          <Field label="Times">
            {(id) => (
              <select id={id} value={timestamps} onChange={(e) => setTimestamps(e.currentTarget.value as Timestamps)}>
                <option value="str">Date and time ({BROWSER_ZONE})</option>
                <option value="int">Epoch seconds</option>
              </select>
            )}
          </Field>
          <div class="actions">
            <button type="button" onClick={() => download('ndjson')}>
              NDJSON
            </button>
            <button type="button" onClick={() => download('csv')}>
              CSV
            </button>
          </div>
          <Failure message={exportError} />
        </section>
      )}
      {panel === 'delete-events' && (
        <DeleteEvents thing={thing} onDone={() => setPanel(undefined)} onDeleted={onEventsDeleted} />
      )}
    </>
  );
}
