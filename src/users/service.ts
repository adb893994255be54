/**
 * Users (docs/api.md, "Users"): e-mail addresses are unique across the server, passwords are write-only.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { conflict, invalidParam, notFound, unknownReference } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { resolveTimeZone, STORED_TIME } from '../core/time.ts';
import {
  findRole,
  findRoleToAssign,
  type Grantor,
  grantedBy,
  requireGrantable,
  requireManageable,
} from '../roles/service.ts';
import { uniqueOr } from '../store/dialect.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import type { UserRow } from '../store/tables.ts';
import { hashPassword } from './passwords.ts';
import { presentUser } from './presenter.ts';
import * as users from './repository.ts';

export interface UserInput {
  email: string;
  password: string;
  role_key: string;
  name?: string | undefined;
  time_zone?: string | undefined;
}

const snapshot = (row: UserRow) => presentUser(row, STORED_TIME);
const emailTaken = (email: string) => conflict('user.email', `a user with the e-mail address ${email} already exists`);

function checkTimeZone(timeZone: string): string {
  if (!resolveTimeZone(timeZone)) throw invalidParam('user.time_zone', `is not a known time zone (${timeZone})`);
  return timeZone;
}

/** Checks the role a user is given, holding it until the transaction ends (roles/service.ts, findRoleToAssign). */
async function checkRole(
  tx: Tx,
  organisationKey: string,
  roleKey: string,
  grantor: Grantor | undefined,
): Promise<void> {
  const role = await findRoleToAssign(tx, [organisationKey], roleKey);
  if (!role) throw unknownReference('user.role_key', roleKey);
  requireGrantable(grantor, grantedBy(role), 'user.role_key');
}

/**
 * Refuses to take away an organisation's last account admin (by deleting the user or giving it another
 * role): nobody would be left to manage its users and roles (docs/api.md, "Users").
 */
async function keepAnAccountAdmin(tx: Tx, user: UserRow, param: string): Promise<void> {
  const admins = await users.lockAccountAdmins(tx, user.organisation_key);
  if (admins.length === 1 && admins[0] === user.user_key) {
    throw conflict(
      param,
      `${user.email} is the organisation's last account admin: give another user the Account Admin role first`,
    );
  }
}

/** Refuses (403) a change to a user whose role the grantor could not give (roles/service.ts, requireManageable). */
async function checkManageable(tx: Tx, user: UserRow, grantor: Grantor | undefined): Promise<void> {
  if (grantor === undefined || grantor.accountAdmin) return;
  const role = await findRole(tx, [user.organisation_key], user.role_key);
  if (role) requireManageable(grantor, grantedBy(role), 'user_key');
}

export interface UserWrite {
  store: Store;
  actor: Actor;
  passwordCost: number;
  /** Who gives the user a role: it may grant only what they hold (roles/service.ts, requireGrantable). */
  grantor?: Grantor | undefined;
}

export type NewUser = Omit<UserInput, 'password'> & { passwordHash: string };

/** Inserts a user inside an open transaction (also used at bootstrap). Hash the password before the transaction. */
export async function insertNewUser(db: Executor, organisationKey: string, input: NewUser): Promise<UserRow> {
  const now = Date.now();
  const row: UserRow = {
    user_key: newKey(),
    organisation_key: organisationKey,
    email: input.email.toLowerCase(),
    name: input.name ?? '',
    password_hash: input.passwordHash,
    role_key: input.role_key,
    time_zone: checkTimeZone(input.time_zone ?? 'UTC'),
    created_at: now,
    updated_at: now,
  };
  await users.insertUser(db, row);
  return row;
}

export async function createUser(write: UserWrite, organisationKey: string, input: UserInput): Promise<UserRow> {
  const { password, ...rest } = input;
  const passwordHash = await hashPassword(password, write.passwordCost);
  return uniqueOr(
    () =>
      write.store.transaction(async (tx) => {
        await checkRole(tx, organisationKey, input.role_key, write.grantor);
        const row = await insertNewUser(tx, organisationKey, { ...rest, passwordHash });
        await recordChange(tx, write.actor, {
          organisationKey,
          action: 'create',
          entityType: 'User',
          entityKey: row.user_key,
          entityName: row.email,
          after: snapshot(row),
        });
        return row;
      }),
    () => emailTaken(input.email),
  );
}

export function listUsers(db: Executor, organisationKeys: string[], list: ListQuery) {
  return users.listUsers(db, organisationKeys, list);
}

/** The user with this e-mail address (unique across the server), or undefined. */
export function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return users.findUserByEmail(db, email);
}

/** How many users the server has, in every organisation. */
export function countUsers(db: Executor): Promise<number> {
  return users.countUsers(db);
}

export async function requireUser(db: Executor, organisationKeys: string[], userKey: string): Promise<UserRow> {
  const row = await users.findUser(db, organisationKeys, userKey);
  if (!row) throw notFound('user', 'user_key');
  return row;
}

export async function updateUser(
  write: UserWrite,
  organisationKeys: string[],
  userKey: string,
  changes: Partial<UserInput>,
): Promise<UserRow> {
  const passwordHash =
    changes.password !== undefined ? await hashPassword(changes.password, write.passwordCost) : undefined;
  return uniqueOr(
    () =>
      write.store.transaction(async (tx) => {
        const before = await requireUser(tx, organisationKeys, userKey);
        await checkManageable(tx, before, write.grantor);
        if (changes.role_key !== undefined) {
          await checkRole(tx, before.organisation_key, changes.role_key, write.grantor);
          if (changes.role_key !== before.role_key) await keepAnAccountAdmin(tx, before, 'user.role_key');
        }
        const after: UserRow = {
          ...before,
          ...(changes.email !== undefined ? { email: changes.email.toLowerCase() } : {}),
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.role_key !== undefined ? { role_key: changes.role_key } : {}),
          ...(changes.time_zone !== undefined ? { time_zone: checkTimeZone(changes.time_zone) } : {}),
          ...(passwordHash !== undefined ? { password_hash: passwordHash } : {}),
          updated_at: Date.now(),
        };
        const { user_key: _key, organisation_key: _org, created_at: _created, ...columns } = after;
        await users.updateUser(tx, userKey, columns);
        // A new password ends every session of the user, so a stolen token dies with the old password.
        if (passwordHash !== undefined) await users.deleteSessionsOfUser(tx, userKey);
        await recordChange(tx, write.actor, {
          organisationKey: before.organisation_key,
          action: 'update',
          entityType: 'User',
          entityKey: userKey,
          entityName: after.email,
          before: snapshot(before),
          after: snapshot(after),
        });
        return after;
      }),
    () => emailTaken(changes.email ?? ''),
  );
}

export async function deleteUser(write: UserWrite, organisationKeys: string[], userKey: string): Promise<void> {
  await write.store.transaction(async (tx) => {
    const before = await requireUser(tx, organisationKeys, userKey);
    await checkManageable(tx, before, write.grantor);
    await keepAnAccountAdmin(tx, before, 'user');
    await users.deleteUser(tx, userKey);
    await recordChange(tx, write.actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'User',
      entityKey: userKey,
      entityName: before.email,
      before: snapshot(before),
    });
  });
}
