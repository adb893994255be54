import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { DataTable } from '../components/data-table.tsx';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { FormActions } from '../components/form-actions.tsx';
import { Pager } from '../components/pager.tsx';
import { useAction } from '../components/use-action.ts';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { RoleSelect } from '../roles/role-select.tsx';
import { type Role, useRoles } from '../roles/use-roles.ts';

type User = paths['/api/v3/users']['get']['responses'][200]['content']['application/json']['users'][number];

const PER = 50;

/** Who may sign in to the organisation, with which role: created, given another role, deleted. */
export function UsersPage() {
  const [page, setPage] = useState(1);
  const users = useLoad(
    () => answer(api.GET('/api/v3/users', { params: { query: { page, per: PER, order_by: 'email', order: 'asc' } } })),
    [page],
  );
  const roles = useRoles();
  const mayCreate = useAllows('user', 'create');
  const mayUpdate = useAllows('user', 'update');
  const mayDelete = useAllows('user', 'delete');
  const [creating, setCreating] = useState(false);
  const roleName = new Map(roles.data?.map((r) => [r.role_key, r.name]));
  return (
    <section>
      <h1>Users</h1>
      {mayCreate && !creating && (
        <button type="button" onClick={() => setCreating(true)}>
          New user
        </button>
      )}
      {creating && (
        <NewUser
          roles={roles.data ?? []}
          onDone={() => setCreating(false)}
          onCreated={() => {
            setCreating(false);
            users.reload();
          }}
        />
      )}
      <Failure message={users.error} />
      {users.data && (
        <DataTable<User>
          label="Users"
          rows={users.data.users}
          rowKey={(u) => u.user_key}
          columns={[
            { header: 'Email', cell: (u) => u.email },
            { header: 'Name', cell: (u) => u.name },
            {
              header: 'Role',
              cell: (u) =>
                mayUpdate && roles.data ? (
                  <RoleChoice
                    user={u}
                    roles={roles.data}
                    onChanged={(role_key) =>
                      users.set((d) => ({
                        ...d,
                        users: d.users.map((x) => (x.user_key === u.user_key ? { ...x, role_key } : x)),
                      }))
                    }
                  />
                ) : (
                  (roleName.get(u.role_key) ?? u.role_key)
                ),
            },
            { header: 'Time zone', cell: (u) => u.time_zone },
            { header: 'Since', cell: (u) => showTime(u.created_at) },
            ...(mayDelete
              ? [
                  {
                    header: 'Actions',
                    cell: (u: User) => (
                      <ConfirmButton
                        label="Delete"
                        accessibleName={`Delete ${u.email}`}
                        title={`Delete ${u.email}?`}
                        question={`The user ${u.email} is deleted and can no longer sign in; the API keys they made stop working.`}
                        onConfirm={async () => {
                          await answer(
                            api.DELETE('/api/v3/users/{user_key}', { params: { path: { user_key: u.user_key } } }),
                          );
                          users.reload();
                        }}
                      />
                    ),
                  },
                ]
              : []),
          ]}
        />
      )}
      {users.data && <Pager page={page} per={PER} total={users.data.total_count} noun="users" onPage={setPage} />}
    </section>
  );
}

/** A user's role, changed as soon as another is chosen; a refusal is said beside it and the choice undone. */
function RoleChoice(props: { user: User; roles: Role[]; onChanged: (roleKey: string) => void }) {
  const { user, roles } = props;
  const action = useAction();
  return (
    <>
      <RoleSelect
        label={`Role of ${user.email}`}
        roles={roles}
        value={user.role_key}
        disabled={action.busy}
        onChange={async (role_key, target) => {
          const done = await action.run(() =>
            answer(
              api.PUT('/api/v3/users/{user_key}', {
                params: { path: { user_key: user.user_key } },
                body: { user: { role_key } },
              }),
            ),
          );
          if (done) props.onChanged(role_key);
          else target.value = user.role_key;
        }}
      />
      <Failure message={action.error} />
    </>
  );
}

function NewUser(props: { roles: Role[]; onDone: () => void; onCreated: () => void }) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [roleKey, setRoleKey] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const role = roleKey || props.roles.find((r) => !r.account_admin)?.role_key || '';
  const submit = async (event: Event) => {
    event.preventDefault();
    const body = { user: { email, name, password, role_key: role } };
    if (await action.run(() => answer(api.POST('/api/v3/users', { body })))) props.onCreated();
  };
  return (
    <form class="panel" aria-label="New user" onSubmit={submit}>
      <h2>New user</h2>
      <Field label="Email">
        {(id) => <input id={id} type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
      </Field>
      <Field label="Name">
        {(id) => <input id={id} value={name} onInput={(e) => setName(e.currentTarget.value)} />}
      </Field>
      <Field label="Role">
        {(id) => <RoleSelect id={id} roles={props.roles} value={role} onChange={setRoleKey} />}
      </Field>
      <Field label="Password" hint="at least 8 characters">
        {(id, describedBy) => (
          <input
            id={id}
            type="password"
            autocomplete="new-password"
            aria-describedby={describedBy}
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        )}
      </Field>
      <FormActions action={action} submit="Create" onCancel={props.onDone} />
    </form>
  );
}
