/**
 * Roles (docs/api.md, "Roles" and "Permissions"): custom roles per organisation plus the two built-in ones.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { ApiError, conflict, forbidden, notFound } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { BUILT_IN_ROLES, type BuiltInRole, grants, permissionOf } from '../core/permissions.ts';
import { STORED_TIME } from '../core/time.ts';
import { uniqueOr } from '../store/dialect.ts';
import { type Executor, noteChange, type Store, type Tx } from '../store/store.ts';
import type { RoleRow } from '../store/tables.ts';
import { presentRole } from './presenter.ts';
import * as roles from './repository.ts';

export interface RoleInput {
  name: string;
  abilities: number[];
}

function checkAbilities(abilities: number[]): number[] {
  const unknown = abilities.filter((a) => permissionOf(a) === undefined);
  if (unknown.length > 0) {
    throw new ApiError(400, [
      {
        code: 'invalid',
        param: 'role.abilities',
        message: `contains abilities outside the table: ${unknown.join(', ')}`,
      },
    ]);
  }
  return [...new Set(abilities)];
}

const snapshot = (row: RoleRow) => presentRole(row, STORED_TIME);

/** Who hands out permissions, through a role made or changed, or given to a user, key pair or API key. */
export interface Grantor {
  abilities: ReadonlySet<number>;
  accountAdmin: boolean;
}

/** A role as the grant checks read it: its abilities, and whether it is the account admin role. */
type GrantedRole = { abilities: readonly number[]; accountAdmin: boolean };

/**
 * Refuses (403) permissions the grantor does not hold (docs/api.md, "Roles"): a user who may create
 * users or change roles must not thereby make an account admin of anyone, themselves included. Account
 * admins hold everything; without a grantor (the command line, the first start) nothing is checked.
 */
export function requireGrantable(grantor: Grantor | undefined, role: GrantedRole, param: string): void {
  refuseBeyond(grantor, role, param, {
    accountAdmin: 'names the account admin role, which only an account admin may give',
    wider: (lacking) => `would grant permissions you lack (${lacking})`,
  });
}

/**
 * Refuses (403) a change to a user, or the user's removal, by a grantor who could not give that user
 * its role (docs/api.md, "Users"): whoever may set a user's password or e-mail address may sign in as
 * that user, so a user who may update users must not thereby take over an account admin.
 */
export function requireManageable(grantor: Grantor | undefined, role: GrantedRole, param: string): void {
  refuseBeyond(grantor, role, param, {
    accountAdmin: 'is an account admin, whom only an account admin may change or delete',
    wider: (lacking) =>
      `holds a role with permissions you lack (${lacking}), so only a user who holds them may change or delete it`,
  });
}

/**
 * Refuses (403) the revocation of another user's API key by a user who could not give the key its role
 * (docs/api.md, "API keys"): a key acting for an account admin is not cut off by a user who may only
 * manage keys.
 */
export function requireRevocable(grantor: Grantor | undefined, role: GrantedRole, param: string): void {
  refuseBeyond(grantor, role, param, {
    accountAdmin: "acts with the account admin role: only an account admin, or the key's maker, may delete it",
    wider: (lacking) =>
      `acts with a role with permissions you lack (${lacking}): only a user who holds them, or the key's maker, may delete it`,
  });
}

/** The 403 naming what of `role` the grantor lacks, in the words of the check that asks; nothing when it lacks nothing. */
function refuseBeyond(
  grantor: Grantor | undefined,
  role: GrantedRole,
  param: string,
  says: { accountAdmin: string; wider: (lacking: string) => string },
): void {
  const lacking = permissionsBeyond(grantor, role);
  if (lacking === undefined) return;
  const message = role.accountAdmin ? says.accountAdmin : says.wider(lacking.join(', '));
  throw new ApiError(403, [{ code: 'forbidden', param, message }]);
}

/**
 * The abilities of `role` the grantor does not hold (empty for the account admin role, which only an
 * account admin holds), or undefined when the grantor holds all of it.
 */
export function permissionsBeyond(grantor: Grantor | undefined, role: GrantedRole): number[] | undefined {
  if (grantor === undefined || grantor.accountAdmin) return undefined;
  const lacking = role.abilities.filter((ability) => {
    const permission = permissionOf(ability);
    return permission !== undefined && !grants(grantor.abilities, permission.class, permission.operation);
  });
  return lacking.length === 0 && !role.accountAdmin ? undefined : lacking;
}

/** The role a row holds, as requireGrantable reads it. */
export const grantedBy = (row: RoleRow) => ({
  abilities: JSON.parse(row.abilities) as number[],
  accountAdmin: row.account_admin === 1,
});

const nameTaken = (name: string) => conflict('role.name', `a role named "${name}" already exists in this organisation`);

export async function createRole(
  store: Store,
  actor: Actor,
  organisationKey: string,
  input: RoleInput,
  grantor?: Grantor,
): Promise<RoleRow> {
  requireGrantable(grantor, { abilities: checkAbilities(input.abilities), accountAdmin: false }, 'role.abilities');
  const now = Date.now();
  const row: RoleRow = {
    role_key: newKey(),
    organisation_key: organisationKey,
    name: input.name,
    abilities: JSON.stringify(checkAbilities(input.abilities)),
    account_admin: 0,
    built_in: null,
    created_at: now,
    updated_at: now,
  };
  await uniqueOr(
    () =>
      store.transaction(async (tx) => {
        await roles.insertRole(tx, row);
        await recordChange(tx, actor, {
          organisationKey,
          action: 'create',
          entityType: 'Role',
          entityKey: row.role_key,
          entityName: row.name,
          after: snapshot(row),
        });
      }),
    () => nameTaken(input.name),
  );
  return row;
}

export function listRoles(db: Executor, organisationKeys: string[], list: ListQuery) {
  return roles.listRoles(db, organisationKeys, list);
}

/** A role of these organisations, or undefined. */
export function findRole(db: Executor, organisationKeys: string[], roleKey: string): Promise<RoleRow | undefined> {
  return roles.findRole(db, organisationKeys, roleKey);
}

/** One of the organisation's built-in roles (every organisation has both). */
export function findBuiltInRole(
  db: Executor,
  organisationKey: string,
  builtIn: BuiltInRole,
): Promise<RoleRow | undefined> {
  return roles.findBuiltInRole(db, organisationKey, builtIn);
}

/**
 * A role of these organisations about to be given to a user, key pair or API key, or undefined: read in
 * the transaction that gives it, and on PostgreSQL locked (FOR KEY SHARE) until that transaction ends.
 * deleteRole locks the role FOR UPDATE before counting its holders, so the two take turns: either the
 * delete waits and then counts the new holder (409), or it has deleted the role and this finds none.
 */
export function findRoleToAssign(tx: Tx, organisationKeys: string[], roleKey: string): Promise<RoleRow | undefined> {
  return roles.findRole(tx, organisationKeys, roleKey, 'key share');
}

export async function requireRole(
  db: Executor,
  organisationKeys: string[],
  roleKey: string,
  lock?: roles.RoleLock,
): Promise<RoleRow> {
  const row = await roles.findRole(db, organisationKeys, roleKey, lock);
  if (!row) throw notFound('role', 'role_key');
  return row;
}

export async function updateRole(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  roleKey: string,
  changes: Partial<RoleInput>,
  grantor?: Grantor,
): Promise<RoleRow> {
  if (changes.abilities !== undefined) {
    requireGrantable(grantor, { abilities: checkAbilities(changes.abilities), accountAdmin: false }, 'role.abilities');
  }
  return uniqueOr(
    () =>
      store.transaction(async (tx) => {
        // Locked as the delete locks it: a change racing the role's delete waits for it and finds no role.
        const before = await requireRole(tx, organisationKeys, roleKey, 'update');
        if (before.built_in) throw forbidden('built-in roles cannot be changed');
        const after: RoleRow = {
          ...before,
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.abilities !== undefined ? { abilities: JSON.stringify(checkAbilities(changes.abilities)) } : {}),
          updated_at: Date.now(),
        };
        await roles.updateRole(tx, roleKey, {
          name: after.name,
          abilities: after.abilities,
          updated_at: after.updated_at,
        });
        await recordChange(tx, actor, {
          organisationKey: before.organisation_key,
          action: 'update',
          entityType: 'Role',
          entityKey: roleKey,
          entityName: after.name,
          before: snapshot(before),
          after: snapshot(after),
        });
        return after;
      }),
    () => nameTaken(changes.name ?? ''),
  );
}

export async function deleteRole(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  roleKey: string,
): Promise<void> {
  await store.transaction(async (tx) => {
    // Locked before the holders are counted: a transaction giving the role (findRoleToAssign) either
    // commits first, and its holder is counted, or waits and then finds the role gone.
    const before = await requireRole(tx, organisationKeys, roleKey, 'update');
    if (before.built_in) throw forbidden('built-in roles cannot be deleted');
    const holders = await roles.countRoleHolders(tx, roleKey);
    if (holders > 0) throw conflict('role_key', `the role is still held by ${holders} user(s) or key pair(s)`);
    await roles.deleteRole(tx, roleKey);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'Role',
      entityKey: roleKey,
      entityName: before.name,
      before: snapshot(before),
    });
  });
}

/** Creates the built-in roles of a new organisation. */
export async function createBuiltInRoles(
  db: Executor,
  organisationKey: string,
  now: number,
): Promise<Record<BuiltInRole, RoleRow>> {
  const created = {} as Record<BuiltInRole, RoleRow>;
  for (const [builtIn, spec] of Object.entries(BUILT_IN_ROLES) as [
    BuiltInRole,
    (typeof BUILT_IN_ROLES)[BuiltInRole],
  ][]) {
    const row: RoleRow = {
      role_key: newKey(),
      organisation_key: organisationKey,
      name: spec.name,
      abilities: JSON.stringify(spec.abilities),
      account_admin: spec.accountAdmin ? 1 : 0,
      built_in: builtIn,
      created_at: now,
      updated_at: now,
    };
    await roles.insertRole(db, row);
    // Made without an audit record: the change feed hears of it here (roles lists are kept in memory).
    await noteChange(db, { entityType: 'Role', organisationKey, entityKey: row.role_key, action: 'create' });
    created[builtIn] = row;
  }
  return created;
}
