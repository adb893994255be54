/**
 * Permission classes, operations and abilities (docs/api.md, "Permissions").
 * An ability is `class * 10 + seqno`: 11 = read things, 35 = everything on rules, 995 = everything.
 */
import { forbidden } from './errors.ts';
import type { Principal } from './principal.ts';

export const PERMISSION_CLASSES = {
  thing: 1,
  thing_template: 2,
  rule: 3,
  instruction: 4,
  group: 5,
  role: 6,
  user: 7,
  gateway: 8,
  alert: 9,
  audit_trail: 10,
  notification_action: 11,
  data: 12,
  key_pair: 13,
  api_key: 14,
  dashboard: 15,
  all: 99,
} as const;

export const OPERATIONS = { read: 1, create: 2, update: 3, delete: 4, all: 5 } as const;

export type PermissionClass = keyof typeof PERMISSION_CLASSES;
export type Operation = keyof typeof OPERATIONS;

export interface Permission {
  class: PermissionClass;
  operation: Operation;
  seqno: number;
}

const CLASS_BY_NUMBER = new Map<number, PermissionClass>(
  Object.entries(PERMISSION_CLASSES).map(([name, n]) => [n, name as PermissionClass]),
);
const OPERATION_BY_SEQNO = new Map<number, Operation>(
  Object.entries(OPERATIONS).map(([name, n]) => [n, name as Operation]),
);

export const ALL_ABILITY = PERMISSION_CLASSES.all * 10 + OPERATIONS.all;

export function abilityOf(cls: PermissionClass, operation: Operation): number {
  return PERMISSION_CLASSES[cls] * 10 + OPERATIONS[operation];
}

/** The permission an ability stands for, or undefined for a number outside the table. */
export function permissionOf(ability: number): Permission | undefined {
  if (!Number.isInteger(ability) || ability < 10) return undefined;
  const cls = CLASS_BY_NUMBER.get(Math.floor(ability / 10));
  const operation = OPERATION_BY_SEQNO.get(ability % 10);
  if (!cls || !operation) return undefined;
  return { class: cls, operation, seqno: OPERATIONS[operation] };
}

/** True when a set of abilities grants `operation` on `cls`, directly or through an `all`. */
export function grants(abilities: ReadonlySet<number>, cls: PermissionClass, operation: Operation): boolean {
  const c = PERMISSION_CLASSES[cls];
  const o = OPERATIONS[operation];
  const all = PERMISSION_CLASSES.all;
  return (
    abilities.has(c * 10 + o) ||
    abilities.has(c * 10 + OPERATIONS.all) ||
    abilities.has(all * 10 + o) ||
    abilities.has(ALL_ABILITY)
  );
}

/**
 * For device requests, over HTTP or MQTT, whose needs are known only as they go (a register creates or
 * updates): a 403 unless the key pair's role grants `operation` on `cls`.
 */
export function requirePermission(principal: Principal, cls: PermissionClass, operation: Operation): void {
  if (!grants(principal.abilities, cls, operation)) {
    throw forbidden(`this key pair's role lacks the permission to ${operation} ${cls}`);
  }
}

/** The built-in roles every organisation has. They cannot be changed or deleted. */
export const BUILT_IN_ROLES = {
  account_admin: { name: 'Account Admin', abilities: [ALL_ABILITY], accountAdmin: true },
  agent: {
    name: 'Agent',
    abilities: [
      abilityOf('thing', 'read'),
      abilityOf('thing', 'create'),
      abilityOf('thing', 'update'),
      abilityOf('alert', 'create'),
      abilityOf('data', 'create'),
    ],
    accountAdmin: false,
  },
} as const;

export type BuiltInRole = keyof typeof BUILT_IN_ROLES;

/** The single (class, operation) abilities both sets grant, directly or through an `all`. */
export function commonAbilities(a: ReadonlySet<number>, b: ReadonlySet<number>): number[] {
  const common: number[] = [];
  for (const cls of Object.keys(PERMISSION_CLASSES) as PermissionClass[]) {
    if (cls === 'all') continue;
    for (const operation of ['read', 'create', 'update', 'delete'] as const) {
      if (grants(a, cls, operation) && grants(b, cls, operation)) common.push(abilityOf(cls, operation));
    }
  }
  return common;
}
