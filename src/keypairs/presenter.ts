import type { TimeFormatter } from '../core/time.ts';
import type { KeyPairRow } from '../store/tables.ts';

/** A key pair as answered; the secret key only once, in the answer to its creation. */
export function presentKeyPair(row: KeyPairRow, time: TimeFormatter, secretKey?: string) {
  return {
    key_pair_key: row.key_pair_key,
    name: row.name,
    access_key: row.access_key,
    role_key: row.role_key,
    ...(secretKey !== undefined ? { secret_key: secretKey } : {}),
    created_at: time(row.created_at),
  };
}
