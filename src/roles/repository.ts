import type { ListQuery } from '../core/list-query.ts';
import { engineOfDb, lockRows } from '../store/dialect.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { RoleRow } from '../store/tables.ts';

export function listRoles(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<RoleRow>(
    db,
    {
      name: 'roles',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('roles')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: { created_at: 'created_at', updated_at: 'updated_at', name: 'name', role_key: 'role_key' },
        key: 'role_key',
        search: ['role_key', 'name'],
      },
    },
    list,
  );
}

/**
 * How a transaction that reads a role holds it until it ends (PostgreSQL row locks; SQLite has one writer
 * at a time and needs none): 'update' to delete it, 'key share' to make it a user's, key pair's or API
 * key's role. The two conflict, so a role cannot be deleted while it is being given.
 */
export type RoleLock = 'update' | 'key share';

export function findRole(
  db: Executor,
  organisationKeys: string[],
  roleKey: string,
  lock?: RoleLock,
): Promise<RoleRow | undefined> {
  const query = db
    .selectFrom('roles')
    .selectAll()
    .where('role_key', '=', roleKey)
    .where(inOrganisations(organisationKeys));
  return (lock ? query.$call(lockRows(engineOfDb(db), { mode: lock })) : query).executeTakeFirst();
}

export function findBuiltInRole(db: Executor, organisationKey: string, builtIn: string): Promise<RoleRow | undefined> {
  return db
    .selectFrom('roles')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('built_in', '=', builtIn)
    .executeTakeFirst();
}

export async function insertRole(db: Executor, row: RoleRow): Promise<void> {
  await db.insertInto('roles').values(row).execute();
}

export async function updateRole(db: Executor, roleKey: string, changes: Partial<RoleRow>): Promise<void> {
  await db.updateTable('roles').set(changes).where('role_key', '=', roleKey).execute();
}

export async function deleteRole(db: Executor, roleKey: string): Promise<void> {
  await db.deleteFrom('roles').where('role_key', '=', roleKey).execute();
}

/** How many users, key pairs and API keys still hold a role. */
export async function countRoleHolders(db: Executor, roleKey: string): Promise<number> {
  let holders = 0;
  for (const table of ['users', 'key_pairs', 'api_keys'] as const) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as('count'))
      .where('role_key', '=', roleKey)
      .executeTakeFirst();
    holders += Number(row?.count ?? 0);
  }
  return holders;
}
