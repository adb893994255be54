/**
 * Which things belong to a group (docs/api.md, "Groups"). A static group (type 1) lists its things; a
 * dynamic group (type 2) holds every thing of its organisation that its expression matches, evaluated
 * whenever it is read.
 *
 * Dynamic membership is computed by streaming the organisation's things from the store in batches,
 * in the order of the requested page (narrowed in SQL where the expression allows, see candidates.ts),
 * evaluating the expression on each and keeping only the requested page: memory stays at one batch plus one page, whatever the number of things; time grows
 * with the number of things (see `npm run bench -- groups`).
 */
import { sql } from 'kysely';
import type { ListQuery } from '../core/list-query.ts';
import { compileMatcher, type Expression, parseThingExpression, thingLookup } from '../expressions/index.ts';
import { engineOfDb } from '../store/dialect.ts';
import { inOrganisations } from '../store/filters.ts';
import { keywordFilter, searchPatterns } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { GroupRow } from '../store/tables.ts';
import { expressionViewOfThing, isAlive } from '../things/presenter.ts';
import { listThings, THING_PAGING, type ThingFilter, type ThingWithTemplate } from '../things/service.ts';
import { candidateCondition } from './candidates.ts';

export const GROUP_TYPE_STATIC = 1;
export const GROUP_TYPE_DYNAMIC = 2;

const BATCH_SIZE = 1000;

/** What a list of a group's things may be narrowed by, beside the group. */
export type MemberFilter = Omit<ThingFilter, 'organisationKeys' | 'staticGroupKey'>;

export async function listGroupMembers(
  db: Executor,
  group: GroupRow,
  filter: MemberFilter,
  list: ListQuery,
): Promise<{ total: number; rows: ThingWithTemplate[] }> {
  const organisationKeys = [group.organisation_key];
  if (group.group_type === GROUP_TYPE_STATIC || group.thing_expression === null) {
    return listThings(db, { ...filter, organisationKeys, staticGroupKey: group.group_key }, list);
  }
  return scanMatches(db, parseThingExpression(group.thing_expression), { ...filter, organisationKeys }, list);
}

/**
 * Candidate things in keyset batches: `things` alone, so that each batch is an index range scan on
 * every engine; the template fields a thing needs come from a map loaded once per scan.
 */
function candidateBatch(db: Executor, expression: Expression, filter: ThingFilter) {
  let query = db
    .selectFrom('things as t')
    .selectAll('t')
    .where(inOrganisations(filter.organisationKeys, 't.organisation_key'));
  if (filter.thingTemplateKey !== undefined) query = query.where('t.thing_template_key', '=', filter.thingTemplateKey);
  if (filter.biDirectional !== undefined) query = query.where('t.bi_directional', '=', filter.biDirectional ? 1 : 0);
  const condition = candidateCondition(expression, engineOfDb(db));
  return condition ? query.where(condition) : query;
}

async function templatesOf(db: Executor, organisationKeys: string[]) {
  const rows = await db
    .selectFrom('thing_templates')
    .select(['thing_template_key', 'name', 'heartbeat_interval', 'retention_days'])
    .where(inOrganisations(organisationKeys))
    .execute();
  return new Map(rows.map((r) => [r.thing_template_key, r]));
}

/** The organisations' days of event retention, for their things without a template's own. */
async function retentionOf(db: Executor, organisationKeys: string[]) {
  const rows = await db
    .selectFrom('organisations')
    .select(['organisation_key', 'retention_days'])
    .where(inOrganisations(organisationKeys))
    .execute();
  return new Map(rows.map((r) => [r.organisation_key, r.retention_days]));
}

async function scanMatches(
  db: Executor,
  expression: Expression,
  filter: ThingFilter,
  list: ListQuery,
): Promise<{ total: number; rows: ThingWithTemplate[] }> {
  const sortColumn = THING_PAGING.sort[list.orderBy] ?? THING_PAGING.key;
  const sortField = sortColumn.replace(/^t\./, '') as keyof ThingWithTemplate;
  const keyColumn = THING_PAGING.key;
  const skip = (list.page - 1) * list.per;
  const now = filter.now ?? Date.now();
  const matches = compileMatcher(expression);
  const templates = await templatesOf(db, filter.organisationKeys);
  const retention = await retentionOf(db, filter.organisationKeys);
  const page: ThingWithTemplate[] = [];
  let total = 0;
  let after: { sort: unknown; key: string } | undefined;
  for (;;) {
    let query = candidateBatch(db, expression, filter);
    if (list.keywords.length > 0) {
      const patterns = searchPatterns(list.keywords, THING_PAGING);
      query = query.where((eb) => keywordFilter(eb, patterns, THING_PAGING, list.matchAll));
    }
    if (after) {
      // Keyset paging: continue after the last row seen, in the page's order.
      const position = after;
      const comparison = list.order === 'asc' ? '>' : '<';
      query = query.where(
        sql<boolean>`(${sql.ref(sortColumn)}, ${sql.ref(keyColumn)}) ${sql.raw(comparison)} (${position.sort}, ${position.key})`,
      );
    }
    const batch = await query
      .orderBy(sql.ref(sortColumn), list.order)
      .orderBy(sql.ref(keyColumn), list.order)
      .limit(sql.lit(BATCH_SIZE))
      .execute();
    for (const thing of batch) {
      const template = templates.get(thing.thing_template_key);
      const row: ThingWithTemplate = {
        ...thing,
        thing_id: Number(thing.thing_id),
        thing_template_name: template?.name ?? '',
        heartbeat_interval: template?.heartbeat_interval ?? 60,
        retention_days: template?.retention_days ?? retention.get(thing.organisation_key) ?? null,
      };
      if (filter.alive !== undefined && isAlive(row, now) !== filter.alive) continue;
      if (!matches(thingLookup(expressionViewOfThing(row, now)))) continue;
      total += 1;
      if (total > skip && page.length < list.per) page.push(row);
    }
    if (batch.length < BATCH_SIZE) break;
    const last = batch[batch.length - 1] as unknown as ThingWithTemplate;
    after = { sort: last[sortField], key: last.thing_key };
  }
  return { total, rows: page };
}
