/**
 * Gateways (docs/gateways.md): a gateway and its adapters, changed through the API or by the gateway
 * itself when it registers.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { invalidParam, notFound } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { normaliseTags } from '../core/tags.ts';
import type { Executor, Store } from '../store/store.ts';
import type { GatewayRow } from '../store/tables.ts';
import { presentGateway, type StoredAdapter } from './presenter.ts';
import * as gateways from './repository.ts';
import type { AdapterInput, GatewayChanges } from './schemas.ts';

export type GatewayInput = GatewayChanges & { name: string };

/** Adapters as stored; `param` names the adapters array in errors. */
export function checkAdapters(adapters: AdapterInput[], param: string): StoredAdapter[] {
  const given = new Map<string, number>();
  adapters.forEach((adapter, index) => {
    if (adapter.adapter_pid === undefined) return;
    if (given.has(adapter.adapter_pid)) {
      throw invalidParam(`${param}.${index}.adapter_pid`, 'is used by another adapter of this gateway');
    }
    given.set(adapter.adapter_pid, index);
  });
  return adapters.map((adapter, index) => {
    const configuration = adapter.configuration ?? '{}';
    try {
      JSON.parse(configuration);
    } catch {
      throw invalidParam(`${param}.${index}.configuration`, 'is not valid JSON text');
    }
    let pid = adapter.adapter_pid;
    if (pid === undefined) {
      do pid = newKey();
      while (given.has(pid));
      given.set(pid, index);
    }
    return { type: adapter.type ?? null, configuration, enabled: adapter.enabled ?? true, adapter_pid: pid };
  });
}

/** The row after `changes`; fields not given keep their value, `adapters` replaces the list. */
function applyChanges(row: GatewayRow, changes: GatewayChanges, adaptersParam: string, now: number): GatewayRow {
  return {
    ...row,
    ...(changes.name !== undefined ? { name: changes.name } : {}),
    ...(changes.gateway_type !== undefined ? { gateway_type: changes.gateway_type } : {}),
    ...(changes.gateway_version !== undefined ? { gateway_version: changes.gateway_version } : {}),
    ...(changes.tags !== undefined ? { tags: JSON.stringify(normaliseTags(changes.tags)) } : {}),
    ...(changes.adapters !== undefined
      ? { adapters: JSON.stringify(checkAdapters(changes.adapters, adaptersParam)) }
      : {}),
    updated_at: now,
  };
}

export async function createGateway(
  store: Store,
  actor: Actor,
  organisationKey: string,
  input: GatewayInput,
): Promise<GatewayRow> {
  const now = Date.now();
  const empty: GatewayRow = {
    gateway_key: newKey(),
    organisation_key: organisationKey,
    name: input.name,
    gateway_type: null,
    gateway_version: null,
    tags: '[]',
    adapters: '[]',
    created_at: now,
    updated_at: now,
  };
  const row = applyChanges(empty, input, 'gateway.adapters', now);
  await store.transaction(async (tx) => {
    await gateways.insertGateway(tx, row);
    await recordChange(tx, actor, {
      organisationKey,
      action: 'create',
      entityType: 'Gateway',
      entityKey: row.gateway_key,
      entityName: row.name,
      after: presentGateway(row),
    });
  });
  return row;
}

export function listGateways(db: Executor, organisationKeys: string[], list: ListQuery) {
  return gateways.listGateways(db, organisationKeys, list);
}

export async function requireGateway(
  db: Executor,
  organisationKeys: string[],
  gatewayKey: string,
): Promise<GatewayRow> {
  const row = await gateways.findGateway(db, organisationKeys, gatewayKey);
  if (!row) throw notFound('gateway', 'gateway_key');
  return row;
}

export async function updateGateway(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  gatewayKey: string,
  changes: GatewayChanges,
  adaptersParam = 'gateway.adapters',
): Promise<GatewayRow> {
  return store.transaction(async (tx) => {
    const before = await requireGateway(tx, organisationKeys, gatewayKey);
    const after = applyChanges(before, changes, adaptersParam, Date.now());
    await gateways.updateGateway(tx, gatewayKey, {
      name: after.name,
      gateway_type: after.gateway_type,
      gateway_version: after.gateway_version,
      tags: after.tags,
      adapters: after.adapters,
      updated_at: after.updated_at,
    });
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'update',
      entityType: 'Gateway',
      entityKey: gatewayKey,
      entityName: after.name,
      before: presentGateway(before),
      after: presentGateway(after),
    });
    return after;
  });
}

export async function deleteGateway(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  gatewayKey: string,
): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await requireGateway(tx, organisationKeys, gatewayKey);
    await gateways.deleteGateway(tx, gatewayKey);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'Gateway',
      entityKey: gatewayKey,
      entityName: before.name,
      before: presentGateway(before),
    });
  });
}
