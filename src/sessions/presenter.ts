import { grants, OPERATIONS, type Operation, PERMISSION_CLASSES, type PermissionClass } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';

const CLASSES = (Object.keys(PERMISSION_CLASSES) as PermissionClass[]).filter((c) => c !== 'all');
const SINGLE_OPERATIONS = (Object.keys(OPERATIONS) as Operation[]).filter((o) => o !== 'all');

/** Per class, the operations `abilities` grant, `all` spelled out (docs/api.md, "Sessions"). */
export function allowedOperations(abilities: ReadonlySet<number>): Record<string, Operation[]> {
  const allowed: Record<string, Operation[]> = {};
  for (const cls of CLASSES) {
    const operations = SINGLE_OPERATIONS.filter((operation) => grants(abilities, cls, operation));
    if (operations.length > 0) allowed[cls] = operations;
  }
  return allowed;
}

export function presentCaller(principal: Principal) {
  return {
    caller: {
      user_key: principal.userKey,
      email: principal.email,
      role_key: principal.roleKey,
      role: principal.roleName,
      account_admin: principal.accountAdmin,
      abilities: [...principal.abilities].sort((a, b) => a - b),
      allowed: allowedOperations(principal.abilities),
      organisation_key: principal.organisationKey,
      is_oem: principal.organisationIsOem,
      time_zone: principal.timeZone,
    },
  };
}
