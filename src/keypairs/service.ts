/**
 * Key pairs (docs/devices.md, "Credentials"): a device's credentials. The secret key is answered once,
 * at creation, and kept sealed with the server's key: checking a device's signature needs it back.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { notFound, unknownReference } from '../core/errors.ts';
import { newKey, newSecretKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { STORED_TIME } from '../core/time.ts';
import { findBuiltInRole, findRoleToAssign, type Grantor, grantedBy, requireGrantable } from '../roles/service.ts';
import type { Executor, Store } from '../store/store.ts';
import type { KeyPairRow } from '../store/tables.ts';
import { presentKeyPair } from './presenter.ts';
import * as keyPairs from './repository.ts';

export async function createKeyPair(
  store: Store,
  box: SecretBox,
  actor: Actor,
  organisationKey: string,
  input: { name: string; role_key?: string | undefined },
  grantor?: Grantor,
): Promise<{ row: KeyPairRow; secretKey: string }> {
  const secretKey = newSecretKey(40);
  return store.transaction(async (tx) => {
    const role =
      input.role_key === undefined
        ? await findBuiltInRole(tx, organisationKey, 'agent')
        : await findRoleToAssign(tx, [organisationKey], input.role_key);
    if (!role) throw unknownReference('key_pair.role_key', input.role_key ?? 'Agent');
    // A device signs in with the key pair's role: it may hold only what its maker holds.
    requireGrantable(grantor, grantedBy(role), 'key_pair.role_key');
    const now = Date.now();
    const row: KeyPairRow = {
      key_pair_key: newKey(),
      organisation_key: organisationKey,
      name: input.name,
      access_key: newSecretKey(40),
      secret_key_sealed: box.seal(secretKey),
      role_key: role.role_key,
      created_at: now,
      updated_at: now,
    };
    await keyPairs.insertKeyPair(tx, row);
    await recordChange(tx, actor, {
      organisationKey,
      action: 'create',
      entityType: 'KeyPair',
      entityKey: row.key_pair_key,
      entityName: row.name,
      after: presentKeyPair(row, STORED_TIME),
    });
    return { row, secretKey };
  });
}

export function listKeyPairs(db: Executor, organisationKeys: string[], list: ListQuery) {
  return keyPairs.listKeyPairs(db, organisationKeys, list);
}

/** A key pair's secret (sealed), role and organisation, by its access key, for checking a device's signature. */
export function findCredentials(db: Executor, accessKey: string) {
  return keyPairs.findCredentials(db, accessKey);
}

export async function requireKeyPair(db: Executor, organisationKeys: string[], key: string): Promise<KeyPairRow> {
  const row = await keyPairs.findKeyPair(db, organisationKeys, key);
  if (!row) throw notFound('key pair', 'key_pair_key');
  return row;
}

export async function deleteKeyPair(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  key: string,
): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await requireKeyPair(tx, organisationKeys, key);
    await keyPairs.deleteKeyPair(tx, key);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'KeyPair',
      entityKey: key,
      entityName: before.name,
      before: presentKeyPair(before, STORED_TIME),
    });
  });
}
