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
import { checkVariables, DashboardChecker, MAX_DASHBOARD_NAME, type Reference } from './widgets.ts';

/** The most JSON text a dashboard may take. */
export const MAX_DASHBOARD_BYTES = 256 * 1024;
export const DEFAULT_TIME_RANGE: TimeRange = { last: '1h' };

export interface DashboardInput {
  name: string;
  description?: string | null | undefined;
  time_range?: TimeRange | undefined;
  /** Checked field by field (widgets.ts, checkVariables). */
  variables?: Record<string, unknown>[] | undefined;
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
  given: { variables: readonly unknown[]; widgets: readonly unknown[] },
  changed: { variables: boolean; widgets: boolean },
): Promise<{ variables: string; widgets: string }> {
  const { variables, references: variableReferences } = checkVariables(given.variables, 'dashboard.variables');
  const checker = new DashboardChecker(new Set(variables.map((v) => v.name)));
  const checked = checker.widgets(given.widgets, 'dashboard.widgets');
  await checkReferences(db, organisationKey, [
    ...(changed.variables ? variableReferences : []),
    ...(changed.widgets ? checker.references : []),
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

/**
 * `name`, or if a dashboard of the organisation has it, the first of `Name (2)`, `Name (3)`, ... that
 * none has; a name already ending in ` (n)` counts on from its stem (`Name (2)` gives `Name (3)`).
 */
async function distinctName(db: Executor, organisationKey: string, name: string): Promise<string> {
  const stem = /^(.*\S) \([1-9][0-9]{0,8}\)$/.exec(name)?.[1] ?? name;
  // Lengths in characters, as the schema and the store count them. A long stem is shortened so that
  // the number still fits: every name tried starts with that prefix.
  const characters = [...stem];
  const prefix = characters.slice(0, MAX_DASHBOARD_NAME - ' (999999999)'.length).join('');
  await dashboards.lockNames(db, organisationKey);
  const taken = new Set(await dashboards.namesStartingWith(db, organisationKey, prefix));
  if (!taken.has(name)) return name;
  for (let n = 2; ; n++) {
    const suffix = ` (${n})`;
    const candidate = `${characters.length + suffix.length > MAX_DASHBOARD_NAME ? prefix : stem}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** Widgets of an exported dashboard without their keys: an imported copy's widgets get new ones. */
const withoutWidgetKeys = (widgets: readonly Record<string, unknown>[]) =>
  widgets.map((widget) => {
    if (widget === null || typeof widget !== 'object' || Array.isArray(widget)) return widget;
    const { widget_key: _, ...rest } = widget;
    return rest;
  });

/**
 * A dashboard from another's export (the API's Dashboard object): created anew, with new keys for it
 * and its widgets, under a name none of the organisation's dashboards has (`Name (2)`), so that a list
 * tells the copy from the dashboard it was exported from.
 */
export function importDashboard(store: Store, actor: Actor, organisationKey: string, exported: DashboardInput) {
  const input: DashboardInput = {
    name: exported.name,
    description: exported.description,
    time_range: exported.time_range,
    variables: exported.variables,
    widgets: exported.widgets && withoutWidgetKeys(exported.widgets),
  };
  return createDashboard(store, actor, organisationKey, input, { distinctName: true });
}

export async function createDashboard(
  store: Store,
  actor: Actor,
  organisationKey: string,
  input: DashboardInput,
  options: { distinctName?: boolean } = {},
) {
  checkTimeRange(input.time_range);
  return store.transaction(async (tx) => {
    const now = Date.now();
    const name = options.distinctName ? await distinctName(tx, organisationKey, input.name) : input.name;
    const columns = await checkedColumns(
      tx,
      organisationKey,
      { variables: input.variables ?? [], widgets: input.widgets ?? [] },
      { variables: true, widgets: true },
    );
    const row: DashboardRow = {
      dashboard_key: newKey(),
      organisation_key: organisationKey,
      name,
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
      {
        variables: changes.variables ?? (JSON.parse(before.variables) as unknown[]),
        widgets: changes.widgets ?? (JSON.parse(before.widgets) as unknown[]),
      },
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
