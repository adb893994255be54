import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import { compiledQuery } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';
import type { KeyPairRow } from '../store/tables.ts';

export function listKeyPairs(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<KeyPairRow>(
    db,
    {
      name: 'key_pairs',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('key_pairs')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: { created_at: 'created_at', name: 'name' },
        key: 'key_pair_key',
        search: ['name', 'access_key'],
      },
    },
    list,
  );
}

export function findKeyPair(db: Executor, organisationKeys: string[], key: string): Promise<KeyPairRow | undefined> {
  return db
    .selectFrom('key_pairs')
    .selectAll()
    .where('key_pair_key', '=', key)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

/** What a device request needs about its key pair, in one query compiled once. */
const credentials = compiledQuery((db: Executor, accessKey: string) =>
  db
    .selectFrom('key_pairs as k')
    .innerJoin('roles as r', 'r.role_key', 'k.role_key')
    .innerJoin('organisations as o', 'o.organisation_key', 'k.organisation_key')
    .select([
      'k.key_pair_key',
      'k.name',
      'k.access_key',
      'k.secret_key_sealed',
      'k.organisation_key',
      'o.is_oem',
      'r.role_key',
      'r.name as role_name',
      'r.abilities',
    ])
    .where('k.access_key', '=', accessKey),
);

export const findCredentials = (db: Executor, accessKey: string) => credentials.executeTakeFirst(db, accessKey);

export async function insertKeyPair(db: Executor, row: KeyPairRow): Promise<void> {
  await db.insertInto('key_pairs').values(row).execute();
}

export async function deleteKeyPair(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('key_pairs').where('key_pair_key', '=', key).execute();
}

/** Every key pair's sealed secret key, by key (re-sealing under another key). */
export function sealedSecrets(db: Executor): Promise<{ key_pair_key: string; secret_key_sealed: string }[]> {
  return db.selectFrom('key_pairs').select(['key_pair_key', 'secret_key_sealed']).orderBy('key_pair_key').execute();
}

export async function resealSecret(db: Executor, keyPairKey: string, sealed: string): Promise<void> {
  await db.updateTable('key_pairs').set({ secret_key_sealed: sealed }).where('key_pair_key', '=', keyPairKey).execute();
}
