import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { ConfirmButton } from '../components/confirm.tsx';
import { DataTable } from '../components/data-table.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
import { useLoad } from '../components/use-load.ts';
import { countOf, showEventsLimit } from '../format.ts';
import { EventsLimit } from './events-limit.tsx';
import { SignInToChild } from './sign-in-to-child.tsx';

type Organisation =
  paths['/api/v3/organisations']['get']['responses'][200]['content']['application/json']['organisations'][number];

/**
 * An OEM organisation's children (docs/api.md, "Organisations and OEM access"), for its account admins:
 * new ones made, deleted with all their data, entered as their account admin, and their events a
 * second limited.
 */
export function OrganisationsPage() {
  const children = useLoad(
    () =>
      answer(api.GET('/api/v3/organisations', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } })),
    [],
  );
  const [creating, setCreating] = useState(false);
  return (
    <section>
      <h1>Organisations</h1>
      <Failure message={children.error} />
      {children.data && !creating && (
        <button type="button" onClick={() => setCreating(true)}>
          New organisation
        </button>
      )}
      {creating && (
        <NewOrganisation
          onCancel={() => setCreating(false)}
          onCreated={() => {
            setCreating(false);
            children.reload();
          }}
        />
      )}
      {children.data &&
        (children.data.organisations.length === 0 ? (
          <EmptyState title="No child organisations">
            A child organisation has its own things, users and data; its account admins are you, signed in to it.
          </EmptyState>
        ) : (
          <DataTable<Organisation>
            label="Child organisations"
            rows={children.data.organisations}
            rowKey={(o) => o.organisation_key}
            columns={[
              { header: 'Name', cell: (o) => o.name ?? '' },
              { header: 'Key', cell: (o) => <code class="key">{o.organisation_key}</code> },
              { header: 'OEM', cell: (o) => (o.is_oem ? 'Yes' : 'No') },
              {
                header: 'Retention',
                cell: (o) => (o.retention_days === null ? 'for ever' : countOf(o.retention_days, 'day')),
              },
              { header: 'Events limit', cell: (o) => showEventsLimit(o.events_per_second) },
              {
                header: 'Actions',
                cell: (o) => {
                  const name = o.name ?? o.organisation_key;
                  return (
                    <div class="actions">
                      <SignInToChild organisation={o} />
                      <EventsLimit
                        organisationKey={o.organisation_key}
                        name={name}
                        perSecond={o.events_per_second}
                        onSaved={children.reload}
                      />
                      <ConfirmButton
                        label="Delete"
                        about={name}
                        title={`Delete the organisation ${name}?`}
                        question={`${name} is deleted with all its data: its users, roles, things, events, rules and alerts. This cannot be undone.`}
                        onConfirm={async () => {
                          await answer(
                            api.DELETE('/api/v3/organisations/{organisation_key}', {
                              params: { path: { organisation_key: o.organisation_key } },
                            }),
                          );
                          children.reload();
                        }}
                      />
                    </div>
                  );
                },
              },
            ]}
          />
        ))}
    </section>
  );
}

function NewOrganisation(props: { onCancel: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [oem, setOem] = useState(false);
  const action = useFieldAction(['organisation.name']);
  const submit = async (event: Event) => {
    event.preventDefault();
    const body = { organisation: { name, is_oem: oem } };
    if (await action.run(() => answerByField(api.POST('/api/v3/organisations', { body })))) props.onCreated();
  };
  return (
    <form class="panel" aria-label="New organisation" onSubmit={submit}>
      <h2>New organisation</h2>
      <TextField label="Name" required value={name} onInput={setName} error={action.of('organisation.name')} />
      <label class="check">
        <input type="checkbox" checked={oem} onChange={(e) => setOem(e.currentTarget.checked)} /> OEM organisation (may
        have children of its own)
      </label>
      <FormActions action={action} submit="Create" onCancel={props.onCancel} />
    </form>
  );
}
