import type { TimeFormatter } from '../core/time.ts';
import type { UserRow } from '../store/tables.ts';

/** The public user: the password hash never leaves the store. */
export function presentUser(row: UserRow, time: TimeFormatter) {
  return {
    user_key: row.user_key,
    email: row.email,
    name: row.name,
    role_key: row.role_key,
    time_zone: row.time_zone,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
