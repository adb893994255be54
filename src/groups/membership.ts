/**
 * Which things belong to a group (CONTRACT 6). A static group (type 1) lists its things; a dynamic
 * group (type 2) holds every thing of its organisation that its expression matches, evaluated
 * whenever it is read.
 *
 * Dynamic membership is computed by streaming the organisation's things from the store in batches,
 * in the order of the requested page (narrowed in SQL where the expression allows, see candidates.ts),
 * evaluating the expression on each and keeping only the requested page: memory stays at one batch plus one page, whatever the number of things; time grows
 * with the number of things (see `npm run bench -- groups`).
 */
import { sql } from 'kysely';
import type { ListQuery } from '../core/http/list.ts';
import { type Expression, matchesExpression, parseThingExpression, thingLookup } from '../expressions/index.ts';
import { engineOfDb } from '../store/dialect.ts';
import { keywordFilter, keywordPatterns } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { GroupRow } from '../store/tables.ts';
import { expressionViewOfThing } from '../things/presenter.ts';
import {
  filteredThings,
  listThings,
  THING_PAGING,
  type ThingFilter,
  type ThingWithTemplate,
  thingFilterValues,
} from '../things/repository.ts';
import { candidateCondition } from './candidates.ts';

export const GROUP_TYPE_STATIC = 1;
export const GROUP_TYPE_DYNAMIC = 2;

const BATCH_SIZE = 1000;

export async function listGroupMembers(
  db: Executor,
  group: GroupRow,
  filter: Omit<ThingFilter, 'organisationKeys' | 'staticGroupKey'>,
  list: ListQuery,
): Promise<{ total: number; rows: ThingWithTemplate[] }> {
  const organisationKeys = [group.organisation_key];
  if (group.group_type === GROUP_TYPE_STATIC || group.thing_expression === null) {
    return listThings(db, { ...filter, organisationKeys, staticGroupKey: group.group_key }, list);
  }
  return scanMatches(db, parseThingExpression(group.thing_expression), { ...filter, organisationKeys }, list);
}

function candidates(db: Executor, expression: Expression, filter: ThingFilter) {
  const query = filteredThings(db, thingFilterValues(filter));
  const condition = candidateCondition(expression, engineOfDb(db));
  return condition ? query.where(condition) : query;
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
  const now = Date.now();
  const page: ThingWithTemplate[] = [];
  let total = 0;
  let after: { sort: unknown; key: string } | undefined;
  for (;;) {
    let query = candidates(db, expression, filter);
    if (list.keywords.length > 0) {
      const patterns = keywordPatterns(list.keywords);
      query = query.where((eb) => keywordFilter(eb, patterns, THING_PAGING.search, list.matchAll));
    }
    if (after) {
      // Keyset paging: continue after the last row seen, in the page's order.
      const position = after;
      const comparison = list.order === 'asc' ? '>' : '<';
      query = query.where(
        sql<boolean>`(${sql.ref(sortColumn)}, ${sql.ref(keyColumn)}) ${sql.raw(comparison)} (${position.sort}, ${position.key})`,
      );
    }
    const batch = (await query
      .orderBy(sql.ref(sortColumn), list.order)
      .orderBy(sql.ref(keyColumn), list.order)
      .limit(sql.lit(BATCH_SIZE))
      .execute()) as ThingWithTemplate[];
    for (const row of batch) {
      if (!matchesExpression(expression, thingLookup(expressionViewOfThing(row, now)))) continue;
      total += 1;
      if (total > skip && page.length < list.per) page.push(row);
    }
    if (batch.length < BATCH_SIZE) break;
    const last = batch[batch.length - 1] as ThingWithTemplate;
    after = { sort: last[sortField], key: last.thing_key };
  }
  return { total, rows: page };
}
