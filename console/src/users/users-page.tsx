import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { DataTable } from '../components/data-table.tsx';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
import { Pager } from '../components/pager.tsx';
import { useAction } from '../components/use-action.ts';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { RoleOptions, RoleSelect } from '../roles/role-select.tsx';
import { type Role, useRoles } from '../roles/use-roles.ts';
import { whatRoleMay } from '../roles/what-role-may.ts';

type User = paths['/api/v3/users']['get']['responses'][200]['content']['application/json']['users'][number];

const PER = 50;
/** The API's least length of a password (src/users/schemas.ts), checked before sending. */
const PASSWORD_LENGTH = 8;

/** Who may sign in to the organisation, with which role: created, given another role, deleted. */
export function UsersPage() {
  const [page, setPage] = useState(1);
  const users = useLoad(
    () => answer(api.GET('/api/v3/users', { params: { query: { page, per: PER, order_by: 'email', order: 'asc' } } })),
    [page],
  );
  // A user is given a role chosen from the roles: that is offered to a role that may read them, and
  // only it asks for them (docs/console.md, "Pages").
  const mayReadRoles = useAllows('role', 'read');
  const roles = useRoles(mayReadRoles);
  const mayCreate = useAllows('user', 'create') && mayReadRoles;
  const mayUpdate = useAllows('user', 'update');
  const mayDelete = useAllows('user', 'delete');
  const [creating, setCreating] = useState(false);
  /** What was last done (a user made, a role changed), announced to assistive technology. */
  const [done, setDone] = useState('');
  const roleName = new Map(roles.data?.map((r) => [r.role_key, r.name]));
  const nameOf = (roleKey: string) => roleName.get(roleKey) ?? roleKey;
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
          onCreated={(email, roleKey) => {
            setCreating(false);
            setDone(`${email} was created with the role ${nameOf(roleKey)}.`);
            users.reload();
          }}
        />
      )}
      <div role="status">{done && <p>{done}</p>}</div>
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
                mayUpdate && mayReadRoles && roles.data ? (
                  <RoleChoice
                    user={u}
                    roles={roles.data}
                    onChoosing={() => setDone('')}
                    onSaved={(role_key) => {
                      setDone(`The role of ${u.email} is now ${nameOf(role_key)}.`);
                      users.set((d) => ({
                        ...d,
                        users: d.users.map((x) => (x.user_key === u.user_key ? { ...x, role_key } : x)),
                      }));
                    }}
                  />
                ) : (
                  nameOf(u.role_key)
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
                        about={u.email}
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

/**
 * A user's role: another chosen is only proposed, saved with `Save` (or dropped with `Cancel`), so that a
 * slip of the mouse or an arrow key gives nobody another role. A refusal (the last account admin's role
 * taken away) is said beside it, the choice kept to be saved again or cancelled.
 */
function RoleChoice(props: { user: User; roles: Role[]; onChoosing: () => void; onSaved: (roleKey: string) => void }) {
  const { user, roles } = props;
  const [chosen, setChosen] = useState(user.role_key);
  const action = useAction();
  // The role the list holds: a page read again after a change elsewhere shows it.
  useEffect(() => setChosen(user.role_key), [user.role_key]);
  const choose = (roleKey: string) => {
    setChosen(roleKey);
    action.clear();
    props.onChoosing();
  };
  const save = async () => {
    const saved = await action.run(() =>
      answer(
        api.PUT('/api/v3/users/{user_key}', {
          params: { path: { user_key: user.user_key } },
          body: { user: { role_key: chosen } },
        }),
      ),
    );
    if (saved) props.onSaved(chosen);
  };
  return (
    <>
      <div class="actions role-choice">
        <RoleSelect
          label={`Role of ${user.email}`}
          roles={roles}
          value={chosen}
          disabled={action.busy}
          onChange={choose}
        />
        {chosen !== user.role_key && (
          <>
            <button type="button" aria-label={`Save the role of ${user.email}`} disabled={action.busy} onClick={save}>
              Save
            </button>
            <button
              type="button"
              class="secondary"
              aria-label={`Cancel the role change of ${user.email}`}
              onClick={() => choose(user.role_key)}
            >
              Cancel
            </button>
          </>
        )}
      </div>
      <Failure message={action.error} />
    </>
  );
}

/**
 * A new user. No role is chosen at first: the roles are the organisation's own, with no built-in one
 * for people but `Account Admin`, and `Agent` (the first by name) is the devices' role, so the admin
 * chooses, the hint saying what the chosen role may do (docs/console.md, Users).
 */
function NewUser(props: { roles: Role[]; onDone: () => void; onCreated: (email: string, roleKey: string) => void }) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [roleKey, setRoleKey] = useState('');
  const [password, setPassword] = useState('');
  /** The password's own check, made by the browser before anything is sent. */
  const [passwordShort, setPasswordShort] = useState(false);
  const action = useFieldAction(['user.email', 'user.name', 'user.role_key', 'user.password']);
  const chosen = props.roles.find((r) => r.role_key === roleKey);
  const submit = async (event: Event) => {
    event.preventDefault();
    const body = { user: { email, name, password, role_key: roleKey } };
    if (await action.run(() => answerByField(api.POST('/api/v3/users', { body })))) props.onCreated(email, roleKey);
  };
  const passwordError = !passwordShort
    ? action.of('user.password')
    : password === ''
      ? `Required: at least ${PASSWORD_LENGTH} characters.`
      : `Use at least ${PASSWORD_LENGTH} characters: this one has ${password.length}.`;
  return (
    <form class="panel" aria-label="New user" onSubmit={submit}>
      <h2>New user</h2>
      <Field label="Email" error={action.of('user.email')}>
        {(id, describedBy) => (
          <input
            id={id}
            type="email"
            required
            aria-describedby={describedBy}
            aria-invalid={action.of('user.email') ? true : undefined}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Name" error={action.of('user.name')}>
        {(id, describedBy) => (
          <input
            id={id}
            aria-describedby={describedBy}
            aria-invalid={action.of('user.name') ? true : undefined}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        label="Role"
        hint={chosen ? whatRoleMay(chosen) : 'What the person may do: each role says so once chosen.'}
        error={action.of('user.role_key')}
      >
        {(id, describedBy) => (
          <select
            id={id}
            required
            aria-describedby={describedBy}
            aria-invalid={action.of('user.role_key') ? true : undefined}
            value={roleKey}
            onChange={(e) => setRoleKey(e.currentTarget.value)}
          >
            <option value="" disabled>
              Choose a role
            </option>
            <RoleOptions roles={props.roles} value={roleKey} />
          </select>
        )}
      </Field>
      <Field label="Password" hint={`at least ${PASSWORD_LENGTH} characters`} error={passwordError}>
        {(id, describedBy) => (
          <input
            id={id}
            type="password"
            autocomplete="new-password"
            required
            minLength={PASSWORD_LENGTH}
            aria-describedby={describedBy}
            aria-invalid={passwordError ? true : undefined}
            value={password}
            onInput={(e) => {
              setPassword(e.currentTarget.value);
              if (e.currentTarget.value.length >= PASSWORD_LENGTH) setPasswordShort(false);
            }}
            onInvalid={(e) => {
              // Said under the field, tied to it, rather than in the browser's passing bubble.
              e.preventDefault();
              setPasswordShort(true);
              e.currentTarget.focus();
            }}
          />
        )}
      </Field>
      <FormActions action={action} submit="Create" onCancel={props.onDone} />
    </form>
  );
}
