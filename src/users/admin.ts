/**
 * Account admins made and rescued from the command line (`thingbase admin create` and
 * `thingbase admin reset-password`, docs/configuration.md "Command line"): for an operator who has
 * the server's configuration but no one left who can sign in.
 */
import { randomBytes } from 'node:crypto';
import { type Actor, recordChange } from '../audit/recorder.ts';
import { ConfigError } from '../core/config.ts';
import { STORED_TIME } from '../core/time.ts';
import { findFirstOrganisation } from '../organisations/service.ts';
import { findBuiltInRole } from '../roles/service.ts';
import { clearSignInFailures } from '../sessions/service.ts';
import { isUniqueViolation } from '../store/dialect.ts';
import type { Store } from '../store/store.ts';
import { hashPassword } from './passwords.ts';
import { presentUser } from './presenter.ts';
import * as users from './repository.ts';
import { insertNewUser } from './service.ts';

/** Who audit trails name for changes made from the command line. */
export const COMMAND_LINE: Actor = { userName: 'thingbase command line', roleName: 'system' };

/** A password to hand out once: 12 random bytes, 16 characters. */
export const generatePassword = (): string => randomBytes(12).toString('base64url');

const MIN_PASSWORD = 8;

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD || password.length > 256) {
    throw new ConfigError(`the password must be ${MIN_PASSWORD} to 256 characters long`);
  }
}

/** The e-mail address of a new admin, normalised, after checking it and the password, if given. */
export function checkNewAdmin(email: string, password: string | undefined): string {
  const normalised = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(normalised)) throw new ConfigError(`"${email}" is not an e-mail address`);
  if (password !== undefined) checkPassword(password);
  return normalised;
}

export interface CreatedAdmin {
  email: string;
  organisationName: string;
  /** Set when the password was generated here: to be shown once. */
  generatedPassword?: string;
}

/**
 * Creates an account admin of the first organisation (the oldest top-level one). On a store with no
 * organisation yet the caller provisions it first (bootstrap); this one needs it to exist.
 */
export async function createAccountAdmin(
  store: Store,
  input: { email: string; password: string | undefined; passwordHashCost: number },
): Promise<CreatedAdmin> {
  const email = checkNewAdmin(input.email, input.password);
  const generatedPassword = input.password === undefined ? generatePassword() : undefined;
  const passwordHash = await hashPassword(input.password ?? (generatedPassword as string), input.passwordHashCost);
  const taken = () => new ConfigError(`a user with the e-mail address ${email} already exists`);
  if (await users.findUserByEmail(store.db, email)) throw taken();
  try {
    return await store.transaction(async (tx) => {
      const organisation = await findFirstOrganisation(tx);
      if (!organisation) throw new ConfigError('the database has no organisation yet');
      const role = await findBuiltInRole(tx, organisation.organisation_key, 'account_admin');
      if (!role) throw new Error(`the organisation ${organisation.name} has no account admin role`);
      const row = await insertNewUser(tx, organisation.organisation_key, {
        email,
        name: 'Administrator',
        role_key: role.role_key,
        passwordHash,
      });
      await recordChange(tx, COMMAND_LINE, {
        organisationKey: organisation.organisation_key,
        action: 'create',
        entityType: 'User',
        entityKey: row.user_key,
        entityName: row.email,
        after: presentUser(row, STORED_TIME),
      });
      return { email, organisationName: organisation.name, ...(generatedPassword ? { generatedPassword } : {}) };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw taken();
    throw error;
  }
}

/**
 * Gives the user with this e-mail address a new random password, ends its sessions and clears its
 * failed sign-ins (which may have locked it out). Returns the new password.
 */
export async function resetPassword(store: Store, input: { email: string; passwordHashCost: number }): Promise<string> {
  const email = input.email.trim().toLowerCase();
  const password = generatePassword();
  const passwordHash = await hashPassword(password, input.passwordHashCost);
  await store.transaction(async (tx) => {
    const before = await users.findUserByEmail(tx, email);
    if (!before) throw new ConfigError(`no user has the e-mail address ${email}`);
    const after = { ...before, password_hash: passwordHash, updated_at: Date.now() };
    await users.updateUser(tx, before.user_key, { password_hash: passwordHash, updated_at: after.updated_at });
    await users.deleteSessionsOfUser(tx, before.user_key);
    await clearSignInFailures(tx, email);
    await recordChange(tx, COMMAND_LINE, {
      organisationKey: before.organisation_key,
      action: 'update',
      entityType: 'User',
      entityKey: before.user_key,
      entityName: before.email,
      before: presentUser(before, STORED_TIME),
      after: presentUser(after, STORED_TIME),
    });
  });
  return password;
}
