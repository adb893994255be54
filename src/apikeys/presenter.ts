import { formatOptional, type TimeFormatter } from '../core/time.ts';
import type { ApiKeyRow } from '../store/tables.ts';

/** An API key as answered; its token only once, in the answer to its creation. */
export function presentApiKey(row: ApiKeyRow, time: TimeFormatter, token?: string) {
  return {
    api_key_key: row.api_key_key,
    name: row.name,
    role_key: row.role_key,
    created_at: time(row.created_at),
    expires_at: formatOptional(time, row.expires_at),
    last_used_at: formatOptional(time, row.last_used_at),
    ...(token !== undefined ? { token } : {}),
  };
}
