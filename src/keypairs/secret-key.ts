/**
 * The key that seals key pairs' secret keys at rest (docs/configuration.md, "Secret key"):
 * THINGBASE_SECRET_KEY when set, else a key generated once and kept in the store. A start checks that
 * this key opens every stored secret, so a changed key stops the start instead of failing every
 * signed device request; `thingbase rotate-secret-key` re-seals the secrets under a new key.
 */
import { ConfigError } from '../core/config.ts';
import { SecretBox } from '../core/secret-box.ts';
import { serverSecret, storedServerSecret } from '../store/server-secrets.ts';
import type { Store } from '../store/store.ts';
import { resealSecret, sealedSecrets } from './repository.ts';

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
  const secrets = await sealedSecrets(store.db);
  const closed = secrets.filter((row) => !opens(box, row.secret_key_sealed)).length;
  if (closed === 0) return box;
  const which =
    secretKey === undefined
      ? 'THINGBASE_SECRET_KEY is not set, and the key generated and kept in the database'
      : 'THINGBASE_SECRET_KEY';
  throw new ConfigError(
    `${which} does not open ${closed} of the ${secrets.length} key pair secret keys stored in the database ` +
      '(they were sealed under another key), so their devices could not sign in. Set THINGBASE_SECRET_KEY ' +
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
    for (const row of await sealedSecrets(tx)) {
      if (opens(newBox, row.secret_key_sealed)) {
        result.unchanged++;
        continue;
      }
      if (!oldBox || !opens(oldBox, row.secret_key_sealed)) {
        stuck.push(row.key_pair_key);
        continue;
      }
      await resealSecret(tx, row.key_pair_key, newBox.seal(oldBox.open(row.secret_key_sealed)));
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
        `${stuck.length} key pair secret keys open neither under the new key nor under ${oldName} ` +
          `(key pairs ${stuck.slice(0, 5).join(', ')}${stuck.length > 5 ? ', ...' : ''}): give the key they were ` +
          'sealed under with --old-key or THINGBASE_OLD_SECRET_KEY. Nothing was changed.',
      );
    }
    return result;
  });
}
