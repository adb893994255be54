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
