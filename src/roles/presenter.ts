import { permissionOf } from '../core/permissions.ts';
import type { TimeFormatter } from '../core/time.ts';
import type { RoleRow } from '../store/tables.ts';

export function abilitiesOf(row: Pick<RoleRow, 'abilities'>): number[] {
  return JSON.parse(row.abilities) as number[];
}

/** The seed's Role; create and update answers carry no timestamps. */
export function presentRole(
  row: RoleRow,
  time: TimeFormatter,
  options: { timestamps: boolean } = { timestamps: true },
) {
  const abilities = abilitiesOf(row);
  return {
    role_key: row.role_key,
    name: row.name,
    abilities,
    account_admin: row.account_admin === 1,
    permissions: abilities.flatMap((a) => {
      const p = permissionOf(a);
      return p ? [p] : [];
    }),
    ...(options.timestamps ? { created_at: time(row.created_at), updated_at: time(row.updated_at) } : {}),
  };
}
