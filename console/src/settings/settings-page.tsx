import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useCaller } from '../caller.ts';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { Figures } from '../components/figures.tsx';
import { FormActions } from '../components/form-actions.tsx';
import { useLoad } from '../components/use-load.ts';
import { countOf } from '../format.ts';
import { currentSession } from '../session.ts';

/** Bytes in the largest unit that keeps the number at least 1 (1000-based, as disks are sold). */
function showBytes(bytes: number): string {
  const units = ['bytes', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? countOf(bytes, 'byte') : `${value.toFixed(1)} ${units[unit]}`;
}

/** The organisation's retention (its account admins') and what it uses (GET /api/v3/usage). */
export function SettingsPage() {
  const organisationKey = currentSession()?.organisationKey ?? '';
  const usage = useLoad(async () => (await answer(api.GET('/api/v3/usage', {}))).usage, []);
  // The retention is read once the role is known, and only by an account admin, whose it is.
  const admin = useCaller()?.account_admin;
  const organisation = useLoad(
    async () =>
      admin
        ? (
            await answer(
              api.GET('/api/v3/organisations/{organisation_key}', {
                params: { path: { organisation_key: organisationKey } },
              }),
            )
          ).organisation
        : undefined,
    [organisationKey, admin],
  );
  return (
    <section>
      <h1>Settings</h1>
      <section aria-labelledby="settings-retention" class="panel">
        <h2 id="settings-retention">Retention</h2>
        {organisation.refused || admin === false ? (
          <p class="muted">Only an account admin sees and sets how long events are kept.</p>
        ) : (
          <Failure message={organisation.error} />
        )}
        {organisation.data && (
          <RetentionForm
            organisationKey={organisationKey}
            retentionDays={organisation.data.retention_days}
            rollupRetentionDays={organisation.data.rollup_retention_days}
          />
        )}
      </section>
      <section aria-labelledby="settings-usage">
        <h2 id="settings-usage">Usage</h2>
        <Failure message={usage.error} />
        {!usage.error && (
          <Figures
            label="Usage"
            figures={[
              { name: 'Things', value: usage.data && String(usage.data.things) },
              { name: 'Events stored today', value: usage.data && String(usage.data.events_stored_today) },
              { name: 'Events stored this month', value: usage.data && String(usage.data.events_stored_this_month) },
              { name: 'API requests today', value: usage.data && String(usage.data.api_requests_today) },
              { name: 'Storage', value: usage.data && showBytes(usage.data.storage_bytes) },
              {
                name: 'Events refused by a limit today',
                value: usage.data && String(usage.data.events_limited_today),
              },
            ]}
          />
        )}
        {usage.data && <EventsLimits usage={usage.data} />}
        <p class="hint">Days are UTC; events count when they are received. Storage is an estimate.</p>
      </section>
    </section>
  );
}

type Usage = paths['/api/v3/usage']['get']['responses'][200]['content']['application/json']['usage'];

/**
 * The limits of events a second the organisation's devices and users are under (GET /api/v3/usage;
 * docs/operations.md, "Admission of events"), in words rather than as figures: the organisation's own
 * `events_per_second`, set by its parent, or else the server's EVENTS_PER_SECOND_PER_ORGANISATION, and
 * each key pair's EVENTS_PER_SECOND_PER_KEY_PAIR.
 */
function EventsLimits({ usage }: { usage: Usage }) {
  const perSecond = usage.events_per_second_limit;
  const own = usage.events_per_second_limit_source === 'organisation';
  const perKeyPair = usage.events_per_second_per_key_pair_limit;
  return (
    <>
      <p>
        <strong>Events limit:</strong>{' '}
        {perSecond === 0
          ? own
            ? 'none: its parent organisation lifted the limit.'
            : 'none: no limit of its own, and the server sets none.'
          : `${countOf(perSecond, 'event')} a second, ${own ? 'set by its parent organisation' : "the server's default"}.`}
      </p>
      <p>
        <strong>Events limit per key pair:</strong>{' '}
        {perKeyPair === 0 ? 'none.' : `${countOf(perKeyPair, 'event')} a second each, set by the server.`}
      </p>
    </>
  );
}

const asText = (days: number | null) => (days === null ? '' : String(days));
const asDays = (text: string) => (text.trim() === '' ? null : Number(text));

function RetentionForm(props: {
  organisationKey: string;
  retentionDays: number | null;
  rollupRetentionDays: number | null;
}) {
  const [events, setEvents] = useState(asText(props.retentionDays));
  const [rollups, setRollups] = useState(asText(props.rollupRetentionDays));
  const [saved, setSaved] = useState(false);
  const action = useFieldAction(['organisation.retention_days', 'organisation.rollup_retention_days']);
  useEffect(() => setSaved(false), [events, rollups]);
  const submit = async (event: Event) => {
    event.preventDefault();
    const body = { organisation: { retention_days: asDays(events), rollup_retention_days: asDays(rollups) } };
    const done = await action.run(() =>
      answerByField(
        api.PUT('/api/v3/organisations/{organisation_key}', {
          params: { path: { organisation_key: props.organisationKey } },
          body,
        }),
      ),
    );
    setSaved(done);
  };
  return (
    <form onSubmit={submit} aria-labelledby="settings-retention">
      <p>How long events and their rollups are kept. Empty: for ever.</p>
      <DaysField
        label="Retention (days)"
        hint="events older than this are deleted; a template may keep its own"
        value={events}
        onInput={setEvents}
        error={action.of('organisation.retention_days')}
      />
      <DaysField
        label="Rollup retention (days)"
        hint="the rollups that answer long ranges"
        value={rollups}
        onInput={setRollups}
        error={action.of('organisation.rollup_retention_days')}
      />
      <FormActions action={action} submit="Save" />
      {saved && <p role="status">Saved.</p>}
    </form>
  );
}

/** Whole days from 1 to 36500 (docs/storage.md, "Retention"); empty for ever. */
function DaysField(props: {
  label: string;
  hint: string;
  value: string;
  onInput: (value: string) => void;
  error: string | undefined;
}) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(id, describedBy, invalid) => (
        <input
          id={id}
          type="number"
          min={1}
          max={36500}
          step={1}
          aria-describedby={describedBy}
          aria-invalid={invalid}
          value={props.value}
          onInput={(e) => props.onInput(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}
