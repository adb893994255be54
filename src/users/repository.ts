import type { ListQuery } from '../core/list-query.ts';
import { engineOfDb, lockRows } from '../store/dialect.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { UserRow } from '../store/tables.ts';

export function listUsers(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<UserRow>(
    db,
    {
      name: 'users',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('users')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: { created_at: 'created_at', updated_at: 'updated_at', email: 'email', name: 'name' },
        key: 'user_key',
        search: ['email', 'name'],
      },
    },
    list,
  );
}

export function findUser(db: Executor, organisationKeys: string[], userKey: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('user_key', '=', userKey)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
}

export async function countUsers(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function insertUser(db: Executor, row: UserRow): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

export async function updateUser(db: Executor, userKey: string, changes: Partial<UserRow>): Promise<void> {
  await db.updateTable('users').set(changes).where('user_key', '=', userKey).execute();
}

export async function deleteUser(db: Executor, userKey: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_key', '=', userKey).execute();
  await db.deleteFrom('users').where('user_key', '=', userKey).execute();
}

/** Signs a user out everywhere (after a password change). */
export async function deleteSessionsOfUser(db: Executor, userKey: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_key', '=', userKey).execute();
}

/**
 * The keys of an organisation's account admins (users holding its Account Admin role), locked on
 * PostgreSQL until the transaction ends: two requests taking away one admin each wait for each other,
 * and the second sees the first's change.
 */
export async function lockAccountAdmins(db: Executor, organisationKey: string): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select('user_key')
    .where('organisation_key', '=', organisationKey)
    .where('role_key', 'in', (eb) =>
      eb
        .selectFrom('roles')
        .select('role_key')
        .where('organisation_key', '=', organisationKey)
        .where('account_admin', '=', 1),
    )
    .$call(lockRows(engineOfDb(db)))
    .execute();
  return rows.map((row) => row.user_key);
}
