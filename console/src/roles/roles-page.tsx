import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows, useCaller } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { DataTable } from '../components/data-table.tsx';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
import { BreakableName } from '../components/name-breaks.tsx';
import { RowButton } from '../components/row-button.tsx';
import { ScrollBox } from '../components/scroll-box.tsx';
import { ability, CLASSES, holds, OPERATIONS } from './abilities.ts';
import { type Role, useRoles } from './use-roles.ts';

/**
 * The built-in roles (docs/api.md, "Permissions") cannot be changed or deleted: `Account Admin` is the
 * only role with `account_admin`, and `Agent` a name no other role of the organisation can take.
 */
const builtIn = (role: Role) => role.account_admin || role.name === 'Agent';

/** The roles of the organisation and what each may do; new ones made, others changed or deleted. */
export function RolesPage() {
  const roles = useRoles();
  const mayCreate = useAllows('role', 'create');
  const mayUpdate = useAllows('role', 'update');
  const mayDelete = useAllows('role', 'delete');
  /** The role being edited, `new` for a new one. */
  const [editing, setEditing] = useState<Role | 'new' | undefined>();
  const done = () => {
    setEditing(undefined);
    roles.reload();
  };
  return (
    <section>
      <h1>Roles</h1>
      {mayCreate && editing === undefined && (
        <button type="button" onClick={() => setEditing('new')}>
          New role
        </button>
      )}
      {editing !== undefined && (
        <RoleForm
          key={editing === 'new' ? 'new' : editing.role_key}
          role={editing === 'new' ? undefined : editing}
          onCancel={() => setEditing(undefined)}
          onSaved={done}
        />
      )}
      <Failure message={roles.error} />
      {roles.data && (
        <DataTable<Role>
          label="Roles"
          rows={roles.data}
          rowKey={(r) => r.role_key}
          columns={[
            { header: 'Name', cell: (r) => r.name },
            {
              header: 'Permissions',
              cell: (r) =>
                r.account_admin
                  ? 'everything, and the organisation'
                  : r.permissions.map((p) => `${p.class} ${p.operation}`).join(', '),
            },
            {
              header: 'Actions',
              cell: (r) =>
                builtIn(r) ? (
                  'built in'
                ) : (
                  <div class="actions">
                    {mayUpdate && <RowButton label="Edit" about={r.name} onClick={() => setEditing(r)} />}
                    {mayDelete && (
                      <ConfirmButton
                        label="Delete"
                        about={r.name}
                        title={`Delete the role ${r.name}?`}
                        question={`The role ${r.name} is deleted. A role that users or key pairs hold cannot be.`}
                        onConfirm={async () => {
                          await answer(
                            api.DELETE('/api/v3/roles/{role_key}', { params: { path: { role_key: r.role_key } } }),
                          );
                          roles.reload();
                        }}
                      />
                    )}
                  </div>
                ),
            },
          ]}
        />
      )}
    </section>
  );
}

/** A role's name and one checkbox per ability, `thing read` to `all all`. */
function RoleForm(props: { role: Role | undefined; onCancel: () => void; onSaved: () => void }) {
  const [name, setName] = useState(props.role?.name ?? '');
  const [abilities, setAbilities] = useState(() => new Set(props.role?.abilities ?? []));
  // Nobody hands out abilities they lack: those are offered greyed out (an account admin may grant all).
  // One the role already has stays enabled, so that it can be taken away; what the API still refuses
  // (`role.abilities`) is said next to Save.
  const caller = useCaller();
  const mayGrant = (n: number) => caller === undefined || caller.account_admin || holds(caller.abilities, n);
  const withheld = CLASSES.some(([, c]) => OPERATIONS.some(([, o]) => !mayGrant(ability(c, o))));
  const action = useFieldAction(['role.name']);
  const toggle = (n: number, on: boolean) => {
    const next = new Set(abilities);
    if (on) next.add(n);
    else next.delete(n);
    setAbilities(next);
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    const role = { name, abilities: [...abilities].sort((a, b) => a - b) };
    const saved = await action.run(() =>
      props.role
        ? answerByField(
            api.PUT('/api/v3/roles/{role_key}', {
              params: { path: { role_key: props.role.role_key } },
              body: { role },
            }),
          )
        : answerByField(api.POST('/api/v3/roles', { body: { role } })),
    );
    if (saved) props.onSaved();
  };
  const title = props.role ? `Edit ${props.role.name}` : 'New role';
  return (
    <form class="panel" aria-label={title} onSubmit={submit}>
      <h2>{title}</h2>
      <TextField label="Name" required value={name} onInput={setName} error={action.of('role.name')} />
      <fieldset class="abilities">
        <legend>Abilities</legend>
        <ScrollBox label="Abilities by class">
          <table>
            <thead>
              <tr>
                <th scope="col">Class</th>
                {OPERATIONS.map(([operation]) => (
                  <th key={operation} scope="col">
                    {operation}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {CLASSES.map(([cls, c]) => (
                <tr key={cls}>
                  <th scope="row">
                    <BreakableName name={cls} />
                  </th>
                  {OPERATIONS.map(([operation, o]) => (
                    <td key={operation}>
                      <input
                        type="checkbox"
                        aria-label={`${cls} ${operation}`}
                        checked={abilities.has(ability(c, o))}
                        disabled={!mayGrant(ability(c, o)) && !abilities.has(ability(c, o))}
                        onChange={(e) => toggle(ability(c, o), e.currentTarget.checked)}
                      />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
        {withheld && <p class="hint">Greyed out: abilities your own role lacks, which you cannot grant.</p>}
      </fieldset>
      <FormActions action={action} submit="Save" onCancel={props.onCancel} />
    </form>
  );
}
