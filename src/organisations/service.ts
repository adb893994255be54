/**
 * Organisations (docs/api.md, "Organisations and OEM access"): the first one is made at bootstrap and
 * is an OEM organisation; its account admin manages child organisations. A new organisation is
 * provisioned with everything it needs to be used at once (built-in roles, and whatever other
 * capabilities register).
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { conflict, forbidden, notFound, ONLY_ACCOUNT_ADMINS } from '../core/errors.ts';
import { newKey, newSecretKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { BuiltInRole } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';
import { STORED_TIME } from '../core/time.ts';
import { createBuiltInRoles } from '../roles/service.ts';
import type { Executor, Store } from '../store/store.ts';
import type { OrganisationRow, RoleRow } from '../store/tables.ts';
import { presentOrganisation } from './presenter.ts';
import * as organisations from './repository.ts';

/** Further set-up a capability gives every new organisation (e.g. a default thing template). */
export type OrganisationProvisioner = (db: Executor, organisationKey: string, now: number) => Promise<void>;

const provisioners: OrganisationProvisioner[] = [];

export function onOrganisationProvisioned(provisioner: OrganisationProvisioner): void {
  if (!provisioners.includes(provisioner)) provisioners.push(provisioner);
}

export interface NewOrganisation {
  name: string;
  isOem: boolean;
  parentKey: string | null;
}

export async function provisionOrganisation(
  db: Executor,
  input: NewOrganisation,
): Promise<{ organisation: OrganisationRow; roles: Record<BuiltInRole, RoleRow> }> {
  const now = Date.now();
  const organisation: OrganisationRow = {
    organisation_key: newKey(),
    name: input.name,
    is_oem: input.isOem ? 1 : 0,
    parent_organisation_key: input.parentKey,
    license_key: newSecretKey(20),
    retention_days: null,
    rollup_retention_days: null,
    events_per_second: null,
    created_at: now,
    updated_at: now,
  };
  await organisations.insertOrganisation(db, organisation);
  const roles = await createBuiltInRoles(db, organisation.organisation_key, now);
  for (const provision of provisioners) await provision(db, organisation.organisation_key, now);
  return { organisation, roles };
}

export function findOrganisation(db: Executor, organisationKey: string): Promise<OrganisationRow | undefined> {
  return organisations.findOrganisation(db, organisationKey);
}

/** The oldest top-level organisation: the one made at bootstrap. */
export function findFirstOrganisation(db: Executor): Promise<OrganisationRow | undefined> {
  return organisations.findFirstOrganisation(db);
}

/** The keys of an organisation's children. */
export function childOrganisationKeys(db: Executor, parentKey: string): Promise<string[]> {
  return organisations.childOrganisationKeys(db, parentKey);
}

const snapshot = (row: OrganisationRow) => presentOrganisation(row, STORED_TIME);

export async function createChildOrganisation(
  store: Store,
  actor: Actor,
  parentKey: string,
  input: { name: string; is_oem?: boolean | undefined },
): Promise<OrganisationRow> {
  return store.transaction(async (tx) => {
    const { organisation } = await provisionOrganisation(tx, {
      name: input.name,
      isOem: input.is_oem ?? false,
      parentKey,
    });
    await recordChange(tx, actor, {
      organisationKey: parentKey,
      action: 'create',
      entityType: 'Organisation',
      entityKey: organisation.organisation_key,
      entityName: organisation.name,
      after: snapshot(organisation),
    });
    return organisation;
  });
}

export function listChildOrganisations(db: Executor, parentKey: string, list: ListQuery) {
  return organisations.listChildOrganisations(db, parentKey, list);
}

/** The caller's own organisation or one of its children; anything else is not found. */
async function requireVisibleOrganisation(db: Executor, callerKey: string, key: string): Promise<OrganisationRow> {
  const row = await organisations.findOrganisation(db, key);
  if (!row || (row.organisation_key !== callerKey && row.parent_organisation_key !== callerKey)) {
    throw notFound('organisation', 'organisation_key');
  }
  return row;
}

async function requireChild(db: Executor, parentKey: string, key: string): Promise<OrganisationRow> {
  const row = await requireVisibleOrganisation(db, parentKey, key);
  if (row.parent_organisation_key !== parentKey) throw notFound('organisation', 'organisation_key');
  return row;
}

/**
 * The organisation an account admin may read and change: its own (any account admin), or a child of
 * its OEM organisation. Anyone else is refused (403); another organisation is not found (404).
 */
async function requireManaged(db: Executor, principal: Principal, key: string): Promise<OrganisationRow> {
  if (!principal.accountAdmin) throw forbidden(ONLY_ACCOUNT_ADMINS);
  if (key === principal.organisationKey) return requireVisibleOrganisation(db, key, key);
  if (!principal.organisationIsOem) throw notFound('organisation', 'organisation_key');
  return requireChild(db, principal.organisationKey, key);
}

export function readOrganisation(db: Executor, principal: Principal, key: string): Promise<OrganisationRow> {
  return requireManaged(db, principal, key);
}

export interface OrganisationChanges {
  name?: string | undefined;
  is_oem?: boolean | undefined;
  retention_days?: number | null | undefined;
  rollup_retention_days?: number | null | undefined;
  events_per_second?: number | null | undefined;
}

/**
 * Changes the caller's own organisation (its retention only: its name and whether it is an OEM
 * organisation are its parent's to decide) or a child of its OEM organisation (anything).
 */
export async function updateOrganisation(
  store: Store,
  actor: Actor,
  principal: Principal,
  key: string,
  changes: OrganisationChanges,
): Promise<OrganisationRow> {
  const own = key === principal.organisationKey;
  return store.transaction(async (tx) => {
    const before = await requireManaged(tx, principal, key);
    if (
      own &&
      (changes.name !== undefined || changes.is_oem !== undefined || changes.events_per_second !== undefined)
    ) {
      throw forbidden(
        "an organisation's own admin changes only its retention; its name, OEM status and events_per_second are its parent's",
      );
    }
    const after: OrganisationRow = {
      ...before,
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.is_oem !== undefined ? { is_oem: changes.is_oem ? 1 : 0 } : {}),
      ...(changes.retention_days !== undefined ? { retention_days: changes.retention_days } : {}),
      ...(changes.rollup_retention_days !== undefined ? { rollup_retention_days: changes.rollup_retention_days } : {}),
      ...(changes.events_per_second !== undefined ? { events_per_second: changes.events_per_second } : {}),
      updated_at: Date.now(),
    };
    await organisations.updateOrganisation(tx, key, {
      name: after.name,
      is_oem: after.is_oem,
      retention_days: after.retention_days,
      rollup_retention_days: after.rollup_retention_days,
      events_per_second: after.events_per_second,
      updated_at: after.updated_at,
    });
    await recordChange(tx, actor, {
      organisationKey: own ? key : principal.organisationKey,
      action: 'update',
      entityType: 'Organisation',
      entityKey: key,
      entityName: after.name,
      before: snapshot(before),
      after: snapshot(after),
    });
    return after;
  });
}

export async function deleteChildOrganisation(
  store: Store,
  actor: Actor,
  parentKey: string,
  key: string,
): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await requireChild(tx, parentKey, key);
    const grandchildren = await organisations.childOrganisationKeys(tx, key);
    if (grandchildren.length > 0) {
      throw conflict('organisation_key', 'the organisation still has child organisations; delete those first');
    }
    await organisations.deleteOrganisation(tx, key);
    await recordChange(tx, actor, {
      organisationKey: parentKey,
      action: 'delete',
      entityType: 'Organisation',
      entityKey: key,
      entityName: before.name,
      before: snapshot(before),
    });
  });
}

/** Organisations whose `events_per_second` is remembered at most; past it, all are read again. */
const EVENT_LIMITS_CACHED = 100_000;

/**
 * Each organisation's own `events_per_second` (null: the server's default), read once and remembered
 * until the change feed tells that the organisation changed (on any instance): the event limits ask
 * for every request and message.
 */
export class OrganisationEventLimits {
  private readonly values = new Map<string, number | null>();
  private readonly stopFollowing: () => void;

  constructor(private readonly store: Store) {
    this.stopFollowing = store.changes.follow(['Organisation'], (change) => {
      if (change.entityKey === null) this.values.clear();
      else this.values.delete(change.entityKey);
    });
  }

  read(organisationKey: string): number | null | Promise<number | null> {
    const known = this.values.get(organisationKey);
    if (known !== undefined) return known;
    return organisations.findOrganisation(this.store.db, organisationKey).then((row) => {
      const value = row?.events_per_second ?? null;
      if (this.values.size >= EVENT_LIMITS_CACHED) this.values.clear();
      this.values.set(organisationKey, value);
      return value;
    });
  }

  close(): void {
    this.stopFollowing();
  }
}
