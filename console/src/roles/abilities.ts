/**
 * A role's abilities are `class * 10 + operation` (docs/api.md, "Permissions"); the console names each
 * `<class> <operation>` as the API's `permissions` do.
 */
export const CLASSES = [
  ['thing', 1],
  ['thing_template', 2],
  ['rule', 3],
  ['instruction', 4],
  ['group', 5],
  ['role', 6],
  ['user', 7],
  ['gateway', 8],
  ['alert', 9],
  ['audit_trail', 10],
  ['notification_action', 11],
  ['data', 12],
  ['key_pair', 13],
  ['api_key', 14],
  ['dashboard', 15],
  ['all', 99],
] as const;

export const OPERATIONS = [
  ['read', 1],
  ['create', 2],
  ['update', 3],
  ['delete', 4],
  ['all', 5],
] as const;

export const ability = (cls: number, operation: number): number => cls * 10 + operation;

/** The `all` class and operation's numbers. */
const ALL_CLASS = 99;
const ALL_OPERATION = 5;

/**
 * Whether abilities `held` grant ability `wanted`, directly or through an `all` (as the API decides
 * who may hand it out: docs/api.md, "Permissions").
 */
export function holds(held: readonly number[], wanted: number): boolean {
  const c = Math.floor(wanted / 10);
  const o = wanted % 10;
  return [wanted, ability(c, ALL_OPERATION), ability(ALL_CLASS, o), ability(ALL_CLASS, ALL_OPERATION)].some((a) =>
    held.includes(a),
  );
}

/**
 * Whether `caller` may give `role` to a user, key pair or API key: an account admin any role, anyone
 * else a role within their own abilities and never `Account Admin` (docs/api.md, "Permissions").
 */
export function mayGive(
  caller: { account_admin: boolean; abilities: number[] } | undefined,
  role: { account_admin: boolean; abilities: number[] },
): boolean {
  if (caller === undefined || caller.account_admin) return true;
  return !role.account_admin && role.abilities.every((a) => holds(caller.abilities, a));
}
