import { sql } from 'kysely';
import { compiledQuery } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';
import type { SessionRow } from '../store/tables.ts';

export async function insertSession(db: Executor, row: SessionRow): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

/** Deletes a session; answers whose it was, if there was one. */
export function deleteSession(db: Executor, tokenHash: string) {
  return db
    .deleteFrom('sessions')
    .where('token_hash', '=', tokenHash)
    .returning(['user_key', 'organisation_key'])
    .executeTakeFirst();
}

export async function touchSession(db: Executor, tokenHash: string, now: number): Promise<void> {
  await db.updateTable('sessions').set({ last_used_at: now }).where('token_hash', '=', tokenHash).execute();
}

export async function deleteExpiredSessions(db: Executor, now: number, idleMs: number): Promise<void> {
  await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_used_at', '<=', now - idleMs)]))
    .execute();
}

/** Everything a request needs about its caller, in one query, compiled once. */
const sessionPrincipal = compiledQuery((db: Executor, tokenHash: string) =>
  db
    .selectFrom('sessions as s')
    .innerJoin('users as u', 'u.user_key', 's.user_key')
    .innerJoin('organisations as o', 'o.organisation_key', 's.organisation_key')
    .innerJoin('roles as r', (join) => join.on(sql<boolean>`r.role_key = coalesce(s.role_key, u.role_key)`))
    // The user's own role: a session in a child organisation holds while it is still an account admin's.
    .innerJoin('roles as ur', 'ur.role_key', 'u.role_key')
    .select([
      's.last_used_at',
      's.expires_at',
      's.role_key as child_role_key',
      'ur.account_admin as own_account_admin',
      'u.user_key',
      'u.email',
      'u.time_zone',
      'o.organisation_key',
      'o.is_oem',
      'r.role_key',
      'r.name as role_name',
      'r.abilities',
      'r.account_admin',
    ])
    .where('s.token_hash', '=', tokenHash),
);

export function findSessionPrincipal(db: Executor, tokenHash: string) {
  return sessionPrincipal.executeTakeFirst(db, tokenHash);
}

export async function recordSignInFailure(db: Executor, email: string, clientAddress: string, at: number) {
  await db.insertInto('sign_in_failures').values({ email, client_address: clientAddress, at }).execute();
}

export async function clearSignInFailures(db: Executor, email: string): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('email', '=', email).execute();
}

/** Count and oldest time of recent failures for an e-mail address or a client address. */
export async function recentSignInFailures(
  db: Executor,
  column: 'email' | 'client_address',
  value: string,
  since: number,
) {
  const row = await db
    .selectFrom('sign_in_failures')
    .select((eb) => [eb.fn.countAll().as('count'), eb.fn.min('at').as('oldest')])
    .where(column, '=', value)
    .where('at', '>', since)
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), oldest: row.oldest === null ? 0 : Number(row.oldest) };
}

export async function pruneSignInFailures(db: Executor, before: number): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('at', '<=', before).execute();
}
