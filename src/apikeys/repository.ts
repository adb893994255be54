import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import { compiledQuery } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';
import type { ApiKeyRow } from '../store/tables.ts';

export function listApiKeys(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<ApiKeyRow>(
    db,
    {
      name: 'api_keys',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('api_keys')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: { sort: { created_at: 'created_at', name: 'name' }, key: 'api_key_key', search: ['name'] },
    },
    list,
  );
}

export function findApiKey(db: Executor, organisationKeys: string[], key: string): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('api_key_key', '=', key)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export async function insertApiKey(db: Executor, row: ApiKeyRow): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

export async function deleteApiKey(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('api_keys').where('api_key_key', '=', key).execute();
}

export async function touchApiKey(db: Executor, tokenHash: string, now: number): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: now }).where('token_hash', '=', tokenHash).execute();
}

/** Who a request with an API key acts as: the key's role, its creator, its organisation; one query compiled once. */
const keyPrincipal = compiledQuery((db: Executor, tokenHash: string) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.user_key', 'k.created_by')
    .innerJoin('organisations as o', 'o.organisation_key', 'k.organisation_key')
    .innerJoin('roles as r', 'r.role_key', 'k.role_key')
    // The maker's role as it is now: the key never does more than its maker may (sessions/service.ts).
    .innerJoin('roles as ur', 'ur.role_key', 'u.role_key')
    .select([
      'ur.abilities as maker_abilities',
      'ur.account_admin as maker_account_admin',
      'k.api_key_key',
      'k.name',
      'k.expires_at',
      'k.last_used_at',
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
    .where('k.token_hash', '=', tokenHash),
);

export const findApiKeyPrincipal = (db: Executor, tokenHash: string) => keyPrincipal.executeTakeFirst(db, tokenHash);
