import { type Permission, permissionOf } from '../core/permissions.ts';
import type { TimeFormatter } from '../core/time.ts';
import type { RoleRow } from '../store/tables.ts';

export function abilitiesOf(row: Pick<RoleRow, 'abilities'>): number[] {
  return JSON.parse(row.abilities) as number[];
}

interface PresentedAbilities {
  readonly abilities: readonly number[];
  readonly permissions: readonly Permission[];
}

/**
 * A role's abilities and permissions as presented, by the stored abilities text: an organisation has
 * a handful of roles, listed again and again. Answers only ever serialise these, never change them.
 */
const presented = new Map<string, PresentedAbilities>();

function presentAbilities(text: string): PresentedAbilities {
  let found = presented.get(text);
  if (!found) {
    const abilities = Object.freeze(JSON.parse(text) as number[]);
    const permissions = Object.freeze(
      abilities.flatMap((a) => {
        const p = permissionOf(a);
        return p ? [Object.freeze(p)] : [];
      }),
    );
    found = { abilities, permissions };
    if (presented.size >= 1000) presented.clear();
    presented.set(text, found);
  }
  return found;
}

/** A role as answered; create and update answers carry no timestamps (docs/api.md, "Roles"). */
export function presentRole(
  row: RoleRow,
  time: TimeFormatter,
  options: { timestamps: boolean } = { timestamps: true },
) {
  const { abilities, permissions } = presentAbilities(row.abilities);
  const accountAdmin = row.account_admin === 1;
  if (!options.timestamps)
    return { role_key: row.role_key, name: row.name, abilities, account_admin: accountAdmin, permissions };
  // One object literal of one shape: cheaper to make and to write than timestamps spread in.
  return {
    role_key: row.role_key,
    name: row.name,
    abilities,
    account_admin: accountAdmin,
    permissions,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
