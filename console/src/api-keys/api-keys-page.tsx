import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Copyable } from '../components/copyable.tsx';
import { DataTable } from '../components/data-table.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Field, TextField } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { RoleSelect } from '../roles/role-select.tsx';
import { type Role, useRoles } from '../roles/use-roles.ts';

type ApiKey = paths['/api/v3/api_keys']['get']['responses'][200]['content']['application/json']['api_keys'][number];

/** Tokens for scripts and integrations (docs/api.md, "API keys"): the token is shown once, at creation. */
export function ApiKeysPage() {
  const keys = useLoad(
    () =>
      answer(api.GET('/api/v3/api_keys', { params: { query: { per: 1000, order_by: 'created_at', order: 'desc' } } })),
    [],
  );
  // A key takes its maker's own role unless another is chosen: the others are read by a role that may.
  const roles = useRoles(useAllows('role', 'read'));
  const mayCreate = useAllows('api_key', 'create');
  const mayDelete = useAllows('api_key', 'delete');
  const [creating, setCreating] = useState(false);
  const [token, setToken] = useState<{ name: string; token: string } | undefined>();
  // As for a key pair's secret: forgotten as the page is hidden, so Back does not show it again.
  useEffect(() => {
    const forget = () => setToken(undefined);
    addEventListener('pagehide', forget);
    return () => removeEventListener('pagehide', forget);
  }, []);
  const roleName = new Map(roles.data?.map((r) => [r.role_key, r.name]));
  return (
    <section>
      <h1>API keys</h1>
      <p>
        An API key is sent as <code>X-Auth-Token</code> by a script, and acts as the user who made it, with its role.
      </p>
      {mayCreate && !creating && (
        <button
          type="button"
          onClick={() => {
            setToken(undefined);
            setCreating(true);
          }}
        >
          New API key
        </button>
      )}
      {creating && (
        <NewApiKey
          roles={roles.data ?? []}
          onCancel={() => setCreating(false)}
          onCreated={(created) => {
            setCreating(false);
            setToken(created);
            keys.reload();
          }}
        />
      )}
      {token && (
        <div class="panel secret">
          <Copyable label="Token" text={token.token} />
          <p class="notice">
            The token of {token.name}, shown only this once: copy it now. The server keeps only its hash.
          </p>
        </div>
      )}
      <Failure message={keys.error} />
      {keys.data?.api_keys.length === 0 && (
        <EmptyState title="No API keys yet">
          {mayCreate
            ? 'Make one for each script or integration with New API key: each can then be given a role of its own, and be deleted without stopping the others.'
            : 'A user whose role may make API keys makes them here, one for each script or integration.'}
        </EmptyState>
      )}
      {keys.data && keys.data.api_keys.length > 0 && (
        <DataTable<ApiKey>
          label="API keys"
          rows={keys.data.api_keys}
          rowKey={(k) => k.api_key_key}
          columns={[
            { header: 'Name', cell: (k) => k.name },
            { header: 'Role', cell: (k) => roleName.get(k.role_key) ?? k.role_key },
            { header: 'Created', cell: (k) => showTime(k.created_at) },
            { header: 'Expires', cell: (k) => (k.expires_at === null ? 'never' : showTime(k.expires_at)) },
            { header: 'Last used', cell: (k) => (k.last_used_at === null ? 'never' : showTime(k.last_used_at)) },
            ...(mayDelete
              ? [
                  {
                    header: 'Actions',
                    cell: (k: ApiKey) => (
                      <ConfirmButton
                        label="Delete"
                        about={k.name}
                        title={`Delete the API key ${k.name}?`}
                        question={`The API key ${k.name} stops working at once, for every script that uses it.`}
                        onConfirm={async () => {
                          await answer(
                            api.DELETE('/api/v3/api_keys/{api_key_key}', {
                              params: { path: { api_key_key: k.api_key_key } },
                            }),
                          );
                          keys.reload();
                        }}
                      />
                    ),
                  },
                ]
              : []),
          ]}
        />
      )}
    </section>
  );
}

function NewApiKey(props: {
  roles: Role[];
  onCancel: () => void;
  onCreated: (created: { name: string; token: string }) => void;
}) {
  const [name, setName] = useState('');
  const [roleKey, setRoleKey] = useState('');
  const [expires, setExpires] = useState('');
  const action = useFieldAction(['api_key.name', 'api_key.role_key', 'api_key.expires_at']);
  const submit = async (event: Event) => {
    event.preventDefault();
    const expiresAt = expires ? Math.floor(new Date(expires).getTime() / 1000) : null;
    const body = { api_key: { name, expires_at: expiresAt, ...(roleKey ? { role_key: roleKey } : {}) } };
    let created: { name: string; token: string } | undefined;
    const done = await action.run(async () => {
      const key = (await answerByField(api.POST('/api/v3/api_keys', { body }))).api_key;
      created = { name: key.name, token: key.token ?? '' };
    });
    if (done && created) props.onCreated(created);
  };
  return (
    <form class="panel" aria-label="New API key" onSubmit={submit}>
      <h2>New API key</h2>
      <TextField label="Name" required value={name} onInput={setName} error={action.of('api_key.name')} />
      <Field label="Role" hint="what the key may do; by default your own role" error={action.of('api_key.role_key')}>
        {(id, describedBy, invalid) => (
          <RoleSelect
            id={id}
            describedBy={describedBy}
            invalid={invalid}
            roles={props.roles}
            value={roleKey}
            onChange={setRoleKey}
            first={<option value="">My own role</option>}
          />
        )}
      </Field>
      <TextField
        label="Expires"
        type="datetime-local"
        hint="in your time zone; empty: never"
        value={expires}
        onInput={setExpires}
        error={action.of('api_key.expires_at')}
      />
      <FormActions action={action} submit="Create" onCancel={props.onCancel} />
    </form>
  );
}
