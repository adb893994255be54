/**
 * First start (docs/configuration.md, "Starting"): on a store with no users, create the first
 * organisation (an OEM organisation) and its account admin. Without THINGBASE_ADMIN_PASSWORD a random
 * password is made and reported once.
 */
import { type Actor, recordChanges } from './audit/recorder.ts';
import { STORED_TIME } from './core/time.ts';
import { presentOrganisation } from './organisations/presenter.ts';
import { provisionOrganisation } from './organisations/service.ts';
// Every new organisation gets its Default thing template: a provisioner registered by this module,
// which the command line, loading no routes, would otherwise not load.
import './templates/service.ts';
import { isUniqueViolation } from './store/dialect.ts';
import type { Store } from './store/store.ts';
import { generatePassword } from './users/admin.ts';
import { hashPassword } from './users/passwords.ts';
import { presentUser } from './users/presenter.ts';
import { countUsers, insertNewUser } from './users/service.ts';

export interface BootstrapSettings {
  adminEmail: string | undefined;
  adminPassword: string | undefined;
  orgName: string;
  passwordHashCost: number;
  /**
   * Who the audit trail names for the organisation and admin made: `thingbase admin create` records
   * them (docs/configuration.md, "Command line"); a server's first start records nothing.
   */
  actor?: Actor | undefined;
}

export interface BootstrapResult {
  email: string;
  /** Set only when the password was generated here: shown once, never stored in clear. */
  generatedPassword?: string;
  organisationKey: string;
}

export async function bootstrapFirstAdmin(
  store: Store,
  settings: BootstrapSettings,
): Promise<BootstrapResult | undefined> {
  if ((await countUsers(store.db)) > 0) return undefined;
  const email = (settings.adminEmail ?? 'admin@localhost').toLowerCase();
  const generatedPassword = settings.adminPassword ? undefined : generatePassword();
  const passwordHash = await hashPassword(
    settings.adminPassword ?? (generatedPassword as string),
    settings.passwordHashCost,
  );
  try {
    return await store.transaction(async (tx) => {
      if ((await countUsers(tx)) > 0) return undefined;
      const { organisation, roles } = await provisionOrganisation(tx, {
        name: settings.orgName,
        isOem: true,
        parentKey: null,
      });
      const user = await insertNewUser(tx, organisation.organisation_key, {
        email,
        name: 'Administrator',
        role_key: roles.account_admin.role_key,
        passwordHash,
      });
      if (settings.actor) {
        const organisationKey = organisation.organisation_key;
        await recordChanges(tx, settings.actor, [
          {
            organisationKey,
            action: 'create',
            entityType: 'Organisation',
            entityKey: organisationKey,
            entityName: organisation.name,
            after: presentOrganisation(organisation, STORED_TIME),
          },
          {
            organisationKey,
            action: 'create',
            entityType: 'User',
            entityKey: user.user_key,
            entityName: user.email,
            after: presentUser(user, STORED_TIME),
          },
        ]);
      }
      return {
        email,
        organisationKey: organisation.organisation_key,
        ...(generatedPassword ? { generatedPassword } : {}),
      };
    });
  } catch (error) {
    // Another instance bootstrapped the same store at the same moment.
    if (isUniqueViolation(error)) return undefined;
    throw error;
  }
}
