import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { EditDelete } from '../components/edit-delete.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Pager } from '../components/pager.tsx';
import { useLoad } from '../components/use-load.ts';
import { type Group, GroupForm } from './group-form.tsx';
import { GroupMembers, useMemberCounts } from './group-members.tsx';

const PER = 50;

/** Groups of things: static ones name their members, dynamic ones hold what their expression matches. */
export function GroupsPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => answer(api.GET('/api/v3/groups', { params: { query: { page, per: PER, order_by: 'name', order: 'asc' } } })),
    [page],
  );
  const counts = useMemberCounts(list.data?.groups);
  const mayCreate = useAllows('group', 'create');
  const mayUpdate = useAllows('group', 'update');
  const mayDelete = useAllows('group', 'delete');
  const [editing, setEditing] = useState<Group | 'new' | undefined>();
  const [shown, setShown] = useState<string | undefined>();
  const newButton = mayCreate && editing === undefined && (
    <button type="button" onClick={() => setEditing('new')}>
      New group
    </button>
  );
  return (
    <section>
      <h1>Groups</h1>
      {list.data?.total_count !== 0 && newButton}
      {editing !== undefined && (
        <GroupForm
          key={editing === 'new' ? 'new' : editing.group_key}
          group={editing === 'new' ? undefined : editing}
          onDone={(saved) => {
            setEditing(undefined);
            if (saved) list.reload();
          }}
        />
      )}
      <Failure message={list.error} />
      {list.data?.total_count === 0 && editing === undefined && (
        <EmptyState title="No groups yet" action={newButton || undefined}>
          A group gathers things, named one by one or matched by an expression, for rules and filters.
        </EmptyState>
      )}
      {list.data && list.data.total_count > 0 && (
        <>
          <table aria-label="Groups" class="cards">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Members</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.groups.map((group) => (
                <Fragment key={group.group_key}>
                  <tr>
                    <td>
                      {group.name}
                      {group.description && <div class="muted">{group.description}</div>}
                    </td>
                    <td data-label="Type">
                      {group.group_type === 2 ? (
                        <>
                          By expression <code>{group.thing_expression}</code>
                        </>
                      ) : (
                        'Static'
                      )}
                    </td>
                    <td data-label="Members">
                      {counts.error ? (
                        <span class="muted">{counts.error}</span>
                      ) : (
                        (counts.data?.[group.group_key] ?? '…')
                      )}
                    </td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={shown === group.group_key}
                        aria-label={`Members of ${group.name}`}
                        onClick={() => setShown(shown === group.group_key ? undefined : group.group_key)}
                      >
                        Members
                      </button>
                      <EditDelete
                        name={group.name}
                        mayUpdate={mayUpdate}
                        mayDelete={mayDelete}
                        onEdit={() => setEditing(group)}
                        question={
                          <>
                            The group <strong>{group.name}</strong> is deleted; its things stay.
                          </>
                        }
                        onDelete={async () => {
                          await answer(
                            api.DELETE('/api/v3/groups/{group_key}', {
                              params: { path: { group_key: group.group_key } },
                            }),
                          );
                          list.reload();
                        }}
                      />
                    </td>
                  </tr>
                  {shown === group.group_key && (
                    <tr>
                      <td colSpan={4}>
                        <GroupMembers groupKey={group.group_key} name={group.name} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          </table>
          {list.data.total_count > PER && (
            <Pager page={page} per={PER} total={list.data.total_count} noun="groups" onPage={setPage} />
          )}
        </>
      )}
    </section>
  );
}
