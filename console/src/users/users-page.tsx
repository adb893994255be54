import { answer, api } from '../api/client.ts';
import { Failure } from '../components/failure.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';

/** The organisation's users and the roles they act with. */
export function UsersPage() {
  const users = useLoad(
    () => answer(api.GET('/api/v3/users', { params: { query: { per: 1000, order_by: 'email', order: 'asc' } } })),
    [],
  );
  const roles = useLoad(
    () => answer(api.GET('/api/v3/roles', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } })),
    [],
  );
  const roleName = new Map(roles.data?.roles.map((r) => [r.role_key, r.name]));
  return (
    <section>
      <h1>Users</h1>
      <Failure message={users.error} />
      {users.data && (
        <table aria-label="Users">
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Time zone</th>
              <th scope="col">Since</th>
            </tr>
          </thead>
          <tbody>
            {users.data.users.map((user) => (
              <tr key={user.user_key}>
                <td>{user.email}</td>
                <td>{user.name}</td>
                <td>{roleName.get(user.role_key) ?? user.role_key}</td>
                <td>{user.time_zone}</td>
                <td>{showTime(user.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Roles</h2>
      <Failure message={roles.error} />
      {roles.data && (
        <table aria-label="Roles">
          <thead>
            <tr>
              <th scope="col">Role</th>
              <th scope="col">Account admin</th>
              <th scope="col">Permissions</th>
            </tr>
          </thead>
          <tbody>
            {roles.data.roles.map((role) => (
              <tr key={role.role_key}>
                <td>{role.name}</td>
                <td>{role.account_admin ? 'Yes' : 'No'}</td>
                <td>
                  {role.account_admin
                    ? 'everything'
                    : role.permissions.map((p) => `${p.class} ${p.operation}`).join(', ')}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
