/**
 * Dashboards (docs/api.md, "Dashboards"): widgets over an organisation's things, shared inside it and
 * drawn by the console. What a widget names is checked when it is saved; a thing, group or template
 * deleted later leaves the dashboard readable (the console draws it as missing).
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { ApiError, notFound, unknownReference } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { STORED_TIME } from '../core/time.ts';
import { findGroup } from '../groups/service.ts';
import type { Executor, Store } from '../store/store.ts';
import type { DashboardRow } from '../store/tables.ts';
import { findTemplate } from '../templates/service.ts';
import { findThingsOfOrganisation } from '../things/service.ts';
import { presentDashboard, type TimeRange } from './presenter.ts';
import * as dashboards from './repository.ts';
import { checkVariables, DashboardChecker, type Reference, type Variable } from './widgets.ts';

/** The most JSON text a dashboard may take. */
export const MAX_DASHBOARD_BYTES = 256 * 1024;
export const DEFAULT_TIME_RANGE: TimeRange = { last: '1h' };

export interface DashboardInput {
  name: string;
  description?: string | null | undefined;
  time_range?: TimeRange | undefined;
  variables?: Variable[] | undefined;
  widgets?: Record<string, unknown>[] | undefined;
}

const snapshot = (row: DashboardRow) => presentDashboard(row, STORED_TIME);

function checkTimeRange(range: TimeRange | undefined): void {
  if (range && 'from' in range && range.from > range.to) {
    throw new ApiError(400, [{ code: 'invalid', param: 'dashboard.time_range.from', message: 'must not be after to' }]);
  }
}

/** Each reference must name a thing, group or template of the organisation: a 400 `not_found` naming it. */
async function checkReferences(db: Executor, organisationKey: string, references: Reference[]): Promise<void> {
  const thingKeys = [...new Set(references.filter((r) => r.kind === 'thing').map((r) => r.key))];
  const things =
    thingKeys.length === 0
      ? new Set<string>()
      : new Set((await findThingsOfOrganisation(db, organisationKey, thingKeys)).map((t) => t.thing_key));
  const known = new Map<string, boolean>();
  for (const reference of references) {
    let exists: boolean | undefined = reference.kind === 'thing' ? things.has(reference.key) : undefined;
    if (exists === undefined) {
      const id = `${reference.kind}:${reference.key}`;
      exists = known.get(id);
      if (exists === undefined) {
        const found =
          reference.kind === 'group'
            ? await findGroup(db, [organisationKey], reference.key)
            : await findTemplate(db, [organisationKey], reference.key);
        exists = found !== undefined;
        known.set(id, exists);
      }
    }
    if (!exists) throw unknownReference(reference.param, reference.key);
  }
}

/**
 * The dashboard's variables and widgets as stored, checked together (widgets name the variables);
 * only the references of the fields given are looked up: those already stored may have gone since.
 */
async function checkedColumns(
  db: Executor,
  organisationKey: string,
  variables: Variable[],
  widgets: readonly unknown[],
  given: { variables: boolean; widgets: boolean },
): Promise<{ variables: string; widgets: string }> {
  const variableReferences = checkVariables(variables, 'dashboard.variables');
  const checker = new DashboardChecker(new Set(variables.map((v) => v.name)));
  const checked = checker.widgets(widgets, 'dashboard.widgets');
  await checkReferences(db, organisationKey, [
    ...(given.variables ? variableReferences : []),
    ...(given.widgets ? checker.references : []),
  ]);
  return { variables: JSON.stringify(variables), widgets: JSON.stringify(checked) };
}

/** A dashboard over 256 KiB of JSON is refused, naming its widgets, which are what makes one large. */
function checkSize(row: DashboardRow): void {
  if (Buffer.byteLength(JSON.stringify(snapshot(row))) > MAX_DASHBOARD_BYTES) {
    throw new ApiError(400, [
      {
        code: 'too_large',
        param: 'dashboard.widgets',
        message: `the dashboard is over ${MAX_DASHBOARD_BYTES} bytes of JSON`,
      },
    ]);
  }
}

export async function createDashboard(store: Store, actor: Actor, organisationKey: string, input: DashboardInput) {
  checkTimeRange(input.time_range);
  return store.transaction(async (tx) => {
    const now = Date.now();
    const columns = await checkedColumns(tx, organisationKey, input.variables ?? [], input.widgets ?? [], {
      variables: true,
      widgets: true,
    });
    const row: DashboardRow = {
      dashboard_key: newKey(),
      organisation_key: organisationKey,
      name: input.name,
      description: input.description ?? null,
      time_range: JSON.stringify(input.time_range ?? DEFAULT_TIME_RANGE),
      ...columns,
      created_at: now,
      updated_at: now,
    };
    checkSize(row);
    await dashboards.insertDashboard(tx, row);
    await recordChange(tx, actor, {
      organisationKey,
      action: 'create',
      entityType: 'Dashboard',
      entityKey: row.dashboard_key,
      entityName: row.name,
      after: snapshot(row),
    });
    return row;
  });
}

export function listDashboards(db: Executor, organisationKeys: string[], list: ListQuery) {
  return dashboards.listDashboards(db, organisationKeys, list);
}

export async function requireDashboard(db: Executor, organisationKeys: string[], key: string): Promise<DashboardRow> {
  const row = await dashboards.findDashboard(db, organisationKeys, key);
  if (!row) throw notFound('dashboard', 'dashboard_key');
  return row;
}

export async function updateDashboard(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  key: string,
  changes: Partial<DashboardInput>,
) {
  checkTimeRange(changes.time_range);
  return store.transaction(async (tx) => {
    const before = await requireDashboard(tx, organisationKeys, key);
    const columns = await checkedColumns(
      tx,
      before.organisation_key,
      changes.variables ?? (JSON.parse(before.variables) as Variable[]),
      changes.widgets ?? (JSON.parse(before.widgets) as unknown[]),
      { variables: changes.variables !== undefined, widgets: changes.widgets !== undefined },
    );
    const after: DashboardRow = {
      ...before,
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.time_range !== undefined ? { time_range: JSON.stringify(changes.time_range) } : {}),
      ...columns,
      updated_at: Date.now(),
    };
    checkSize(after);
    const { dashboard_key: _k, organisation_key: _o, created_at: _c, ...changed } = after;
    await dashboards.updateDashboard(tx, key, changed);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'update',
      entityType: 'Dashboard',
      entityKey: key,
      entityName: after.name,
      before: snapshot(before),
      after: snapshot(after),
    });
    return after;
  });
}

export async function deleteDashboard(store: Store, actor: Actor, organisationKeys: string[], key: string) {
  await store.transaction(async (tx) => {
    const before = await requireDashboard(tx, organisationKeys, key);
    await dashboards.deleteDashboard(tx, key);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'Dashboard',
      entityKey: key,
      entityName: before.name,
      before: snapshot(before),
    });
  });
}
