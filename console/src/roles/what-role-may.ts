import type { Role } from './use-roles.ts';

/** The built-in role of devices' key pairs (docs/api.md, "Permissions"): no other role may take its name. */
export const isDeviceRole = (role: Role): boolean => !role.account_admin && role.name === 'Agent';

/** Whether the role grants `operation` on `cls`, `all` standing for every class or operation. */
const grants = (role: Role, cls: string, operation: string): boolean =>
  role.account_admin ||
  role.permissions.some(
    (p) => (p.class === cls || p.class === 'all') && (p.operation === operation || p.operation === 'all'),
  );

/** What the Overview, the page a person sees first, reads: its figures and its open alerts. */
const OVERVIEW_NEEDS = [
  ['thing', 'read', 'the fleet'],
  ['alert', 'read', 'the open alerts'],
] as const;

/**
 * What a role lets a person do, in a sentence, from the roles list (its `permissions`): the abilities
 * by name, and what the console's first page needs that it lacks.
 */
export function whatRoleMay(role: Role): string {
  if (role.account_admin) return `${role.name} may do everything, the organisation's users and settings included.`;
  const may = role.permissions.map((p) => `${p.class} ${p.operation}`).join(', ') || 'nothing';
  const lacks = OVERVIEW_NEEDS.filter(([cls, operation]) => !grants(role, cls, operation));
  const overview =
    lacks.length === 0
      ? ''
      : ` Without ${lacks.map(([cls, operation]) => `${cls} ${operation}`).join(' and ')}, the Overview cannot show ${lacks.map(([, , what]) => what).join(' or ')}.`;
  if (isDeviceRole(role)) return `${role.name} is the role of devices' key pairs (${may}), not of people.${overview}`;
  return `${role.name} may: ${may}.${overview}`;
}
