/**
 * Thing templates (docs/api.md, "Thing templates"): what a kind of thing measures and how often it is
 * heard from. Every organisation has a `Default` template, which devices' auto-registered things use.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { conflict, forbidden, invalidParam, notFound } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { Principal } from '../core/principal.ts';
import { STORED_TIME } from '../core/time.ts';
import { onOrganisationProvisioned } from '../organisations/service.ts';
import { uniqueOr } from '../store/dialect.ts';
import { type Executor, noteChange, type Store, type Tx } from '../store/store.ts';
import type { ThingTemplateRow } from '../store/tables.ts';
import { holderIn, holdersOf, holdersOfName } from './metric-names.ts';
import { type MetricDefinition, presentTemplate } from './presenter.ts';
import * as templates from './repository.ts';

export const DEFAULT_TEMPLATE_NAME = 'Default';

/**
 * The Default template grows the metrics its things report (docs/devices.md): called by ingestion in
 * the event writer's transaction with the new metrics of each template. Not an audited change; the
 * change feed is told of it, so what is kept of the template elsewhere is read again.
 */
export async function growTemplateMetrics(
  tx: Tx,
  organisationKey: string,
  discovered: Map<string, Map<string, MetricDefinition>>,
): Promise<void> {
  for (const [templateKey, metrics] of discovered) {
    const text = await templates.templateMetrics(tx, templateKey);
    if (text === undefined) continue;
    const current = JSON.parse(text) as MetricDefinition[];
    const known = new Set(current.map((m) => m.name));
    // A metric inside another, or holding one, is not learnt: events of one bulk (or one that came
    // before) may give `m` a number and `m.x` a value, and the template would refuse every event of
    // one shape from then on. The first learnt stays; the others' values are stored with their events.
    const holders = holdersOf(known);
    const added: MetricDefinition[] = [];
    for (const metric of metrics.values()) {
      if (known.has(metric.name) || holders.has(metric.name) || holderIn(metric.name, known) !== undefined) continue;
      known.add(metric.name);
      for (const holder of holdersOfName(metric.name)) holders.add(holder);
      added.push(metric);
    }
    if (added.length === 0) continue;
    await templates.updateTemplate(tx, templateKey, { metrics: JSON.stringify([...current, ...added]) });
    await noteChange(tx, { entityType: 'ThingTemplate', organisationKey, entityKey: templateKey, action: 'update' });
  }
}
export const DEFAULT_HEARTBEAT_INTERVAL = 60;
export const DEFAULT_IDLE_TIMEOUT = 300;

export interface TemplateInput {
  name: string;
  description?: string | undefined;
  metrics?: { name: string; data_type: MetricDefinition['data_type']; unit?: string | undefined }[] | undefined;
  heartbeat_interval?: number | undefined;
  idle_timeout?: number | undefined;
  retention_days?: number | null | undefined;
}

/** How long data is kept is the account admin's to decide (docs/storage.md). */
export function checkRetentionChange(principal: Principal, input: Partial<TemplateInput>): void {
  if (input.retention_days !== undefined && !principal.accountAdmin) {
    throw forbidden("only an account admin may change a template's retention_days");
  }
}

const snapshot = (row: ThingTemplateRow) => presentTemplate(row, STORED_TIME);
const nameTaken = (name: string) =>
  conflict('thing_template.name', `a thing template named "${name}" already exists in this organisation`);

/**
 * The metrics as stored; a name given twice is a 400 (which of the two was meant is not ours to guess),
 * and so is one no event could address.
 */
function normaliseMetrics(metrics: TemplateInput['metrics']): string {
  const seen = new Set<string>();
  const list: MetricDefinition[] = [];
  for (const m of metrics ?? []) {
    if (seen.has(m.name)) throw invalidParam('thing_template.metrics', `names the metric "${m.name}" more than once`);
    // A dot steps into nested data: an empty step (`.a`, `a..b`, `a.`) names no member an event has.
    if (m.name.split('.').includes('')) {
      throw invalidParam('thing_template.metrics', `names the metric "${m.name}", with an empty part between dots`);
    }
    seen.add(m.name);
    list.push({ name: m.name, data_type: m.data_type, unit: m.unit ?? '' });
  }
  for (const name of seen) {
    const holder = holderIn(name, seen);
    if (holder !== undefined) {
      throw invalidParam(
        'thing_template.metrics',
        `names the metric "${name}" inside the metric "${holder}": a value holds either a metric or metrics, not both`,
      );
    }
  }
  return JSON.stringify(list);
}

export function newTemplateRow(
  organisationKey: string,
  input: TemplateInput,
  now: number,
  isDefault = false,
): ThingTemplateRow {
  return {
    thing_template_key: newKey(),
    organisation_key: organisationKey,
    name: input.name,
    description: input.description ?? '',
    metrics: normaliseMetrics(input.metrics),
    heartbeat_interval: input.heartbeat_interval ?? DEFAULT_HEARTBEAT_INTERVAL,
    idle_timeout: input.idle_timeout ?? DEFAULT_IDLE_TIMEOUT,
    is_default: isDefault ? 1 : 0,
    retention_days: input.retention_days ?? null,
    created_at: now,
    updated_at: now,
  };
}

onOrganisationProvisioned(async (db, organisationKey, now) => {
  await templates.insertTemplate(db, newTemplateRow(organisationKey, { name: DEFAULT_TEMPLATE_NAME }, now, true));
});

export async function createTemplate(store: Store, actor: Actor, organisationKey: string, input: TemplateInput) {
  const row = newTemplateRow(organisationKey, input, Date.now());
  await uniqueOr(
    () =>
      store.transaction(async (tx) => {
        await templates.insertTemplate(tx, row);
        await recordChange(tx, actor, {
          organisationKey,
          action: 'create',
          entityType: 'ThingTemplate',
          entityKey: row.thing_template_key,
          entityName: row.name,
          after: snapshot(row),
        });
      }),
    () => nameTaken(input.name),
  );
  return row;
}

export function listTemplates(db: Executor, organisationKeys: string[], list: ListQuery) {
  return templates.listTemplates(db, organisationKeys, list);
}

/** A template of these organisations, or undefined. */
export function findTemplate(
  db: Executor,
  organisationKeys: string[],
  key: string,
): Promise<ThingTemplateRow | undefined> {
  return templates.findTemplate(db, organisationKeys, key);
}

/** The organisation's template of this name, or undefined. */
export function findTemplateNamed(db: Executor, organisationKey: string, name: string) {
  return templates.findTemplateNamed(db, organisationKey, name);
}

/** The organisation's Default template, which auto-registered things get. */
export function findDefaultTemplate(db: Executor, organisationKey: string): Promise<ThingTemplateRow | undefined> {
  return templates.findDefaultTemplate(db, organisationKey);
}

export async function requireTemplate(
  db: Executor,
  organisationKeys: string[],
  key: string,
): Promise<ThingTemplateRow> {
  const row = await templates.findTemplate(db, organisationKeys, key);
  if (!row) throw notFound('thing template', 'thing_template_key');
  return row;
}

export async function updateTemplate(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  key: string,
  changes: Partial<TemplateInput>,
) {
  return uniqueOr(
    () =>
      store.transaction(async (tx) => {
        const before = await requireTemplate(tx, organisationKeys, key);
        const after: ThingTemplateRow = {
          ...before,
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.description !== undefined ? { description: changes.description } : {}),
          ...(changes.metrics !== undefined ? { metrics: normaliseMetrics(changes.metrics) } : {}),
          ...(changes.heartbeat_interval !== undefined ? { heartbeat_interval: changes.heartbeat_interval } : {}),
          ...(changes.idle_timeout !== undefined ? { idle_timeout: changes.idle_timeout } : {}),
          ...(changes.retention_days !== undefined ? { retention_days: changes.retention_days } : {}),
          updated_at: Date.now(),
        };
        const { thing_template_key: _k, organisation_key: _o, created_at: _c, is_default: _d, ...columns } = after;
        await templates.updateTemplate(tx, key, columns);
        await recordChange(tx, actor, {
          organisationKey: before.organisation_key,
          action: 'update',
          entityType: 'ThingTemplate',
          entityKey: key,
          entityName: after.name,
          before: snapshot(before),
          after: snapshot(after),
        });
        return after;
      }),
    () => nameTaken(changes.name ?? ''),
  );
}

export async function deleteTemplate(store: Store, actor: Actor, organisationKeys: string[], key: string) {
  await store.transaction(async (tx) => {
    const before = await requireTemplate(tx, organisationKeys, key);
    if (before.is_default) {
      throw conflict(
        'thing_template_key',
        'the Default template receives auto-registered things and cannot be deleted',
      );
    }
    const users = await templates.countThingsOfTemplate(tx, key);
    if (users > 0) throw conflict('thing_template_key', `the template is still used by ${users} thing(s)`);
    await templates.deleteTemplate(tx, key);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'ThingTemplate',
      entityKey: key,
      entityName: before.name,
      before: snapshot(before),
    });
  });
}
