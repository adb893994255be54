/**
 * The key that seals secrets at rest (docs/configuration.md, "Secret key"): key pairs' secret keys and
 * notification actions' credentials. THINGBASE_SECRET_KEY when set, else a key generated once and kept
 * in the store. A start checks that this key opens every stored secret, so a changed key stops the
 * start instead of failing every signed device request or delivery; `thingbase rotate-secret-key`
 * re-seals the secrets under a new key.
 */

import { resealActionSecrets, sealedActionSecrets, sealStoredActions } from '../actions/service.ts';
import { ConfigError } from '../core/config.ts';
import { SecretBox } from '../core/secret-box.ts';
import { serverSecret, storedServerSecret } from '../store/server-secrets.ts';
import type { Executor, Store } from '../store/store.ts';
import { resealSecret, sealedSecrets } from './repository.ts';

/** A secret stored sealed, and how to store it sealed again. */
interface SealedSecret {
  /** What it is, for messages: `key pair K`, `notification action K`. */
  name: string;
  sealed: string;
  reseal: (db: Executor, sealed: string) => Promise<void>;
}

async function storedSecrets(db: Executor): Promise<SealedSecret[]> {
  const keyPairs = (await sealedSecrets(db)).map(
    (row): SealedSecret => ({
      name: `key pair ${row.key_pair_key}`,
      sealed: row.secret_key_sealed,
      reseal: (tx, sealed) => resealSecret(tx, row.key_pair_key, sealed),
    }),
  );
  const actions = (await sealedActionSecrets(db)).map(
    (row): SealedSecret => ({
      name: `notification action ${row.notification_action_key}`,
      sealed: row.secrets_sealed,
      reseal: (tx, sealed) => resealActionSecrets(tx, row.notification_action_key, sealed),
    }),
  );
  return [...keyPairs, ...actions];
}

/** Name of the generated key in `server_secrets`. */
const GENERATED_KEY = 'secret_box_key';

const opens = (box: SecretBox, sealed: string): boolean => {
  try {
    box.open(sealed);
    return true;
  } catch {
    return false;
  }
};

/**
 * The box sealing key pair secrets under the configured key (THINGBASE_SECRET_KEY, else the stored
 * generated one). Throws a ConfigError naming THINGBASE_SECRET_KEY and `rotate-secret-key` when that
 * key does not open every stored secret.
 */
export async function openSecretBox(store: Store, secretKey: string | undefined): Promise<SecretBox> {
  const box = new SecretBox(secretKey ?? (await serverSecret(store.db, GENERATED_KEY)));
  const secrets = await storedSecrets(store.db);
  const closed = secrets.filter((secret) => !opens(box, secret.sealed)).length;
  if (closed === 0) {
    // Actions stored before their credentials were sealed are sealed now (docs/configuration.md).
    await store.transaction((tx) => sealStoredActions(tx, box));
    return box;
  }
  const which =
    secretKey === undefined
      ? 'THINGBASE_SECRET_KEY is not set, and the key generated and kept in the database'
      : 'THINGBASE_SECRET_KEY';
  throw new ConfigError(
    `${which} does not open ${closed} of the ${secrets.length} secrets sealed in the database (key pairs' ` +
      "secret keys and notification actions' credentials, sealed under another key), so their devices could " +
      'not sign in and their actions could not be delivered. Set THINGBASE_SECRET_KEY ' +
      'to the key they were sealed under, or re-seal them under the new key with `thingbase rotate-secret-key` ' +
      '(docs/configuration.md, "Secret key").',
  );
}

export interface RotationResult {
  /** Secrets re-sealed from the old key to the new one. */
  resealed: number;
  /** Secrets already sealed under the new key, left as they were. */
  unchanged: number;
}

/**
 * Re-seals every key pair secret under `newKey` (THINGBASE_SECRET_KEY; undefined = the stored generated
 * key, made if missing), in one transaction: a secret that already opens under the new key is left as
 * it is, one that opens under `oldKey` (undefined = the stored generated key) is re-sealed, and any
 * that opens under neither aborts the whole rotation, which then changes nothing.
 */
export async function rotateSecretKey(
  store: Store,
  keys: { oldKey: string | undefined; newKey: string | undefined },
): Promise<RotationResult> {
  return store.transaction(async (tx) => {
    const generated = await storedServerSecret(tx, GENERATED_KEY);
    const oldKey = keys.oldKey ?? generated;
    const newBox = new SecretBox(keys.newKey ?? (await serverSecret(tx, GENERATED_KEY)));
    const oldBox = oldKey === undefined ? undefined : new SecretBox(oldKey);
    const result: RotationResult = { resealed: 0, unchanged: 0 };
    const stuck: string[] = [];
    for (const secret of await storedSecrets(tx)) {
      if (opens(newBox, secret.sealed)) {
        result.unchanged++;
        continue;
      }
      if (!oldBox || !opens(oldBox, secret.sealed)) {
        stuck.push(secret.name);
        continue;
      }
      await secret.reseal(tx, newBox.seal(oldBox.open(secret.sealed)));
      result.resealed++;
    }
    if (stuck.length > 0) {
      const oldName =
        keys.oldKey !== undefined
          ? 'the old key given (--old-key or THINGBASE_OLD_SECRET_KEY)'
          : generated !== undefined
            ? 'the key generated and kept in the database'
            : 'any old key (none was given, and the database keeps no generated key)';
      throw new ConfigError(
        `${stuck.length} sealed secrets open neither under the new key nor under ${oldName} ` +
          `(${stuck.slice(0, 5).join(', ')}${stuck.length > 5 ? ', ...' : ''}): give the key they were ` +
          'sealed under with --old-key or THINGBASE_OLD_SECRET_KEY. Nothing was changed.',
      );
    }
    return result;
  });
}
