/**
 * One page of a list query: keyword search over named columns, a sort on a declared field with the
 * key as tie-break (so paging never repeats or skips a row), and the total count. Works on any
 * Kysely select over any table, on both engines.
 */
import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { ListQuery } from '../core/http/list.ts';

export interface PagingColumns {
  /** field name (as in `order_by`) -> column reference */
  sort: Record<string, string>;
  /** Column that breaks ties: the resource key. */
  key: string;
  /** Columns a keyword may match (case-insensitive substring). */
  search: string[];
}

/** Escapes LIKE wildcards, for use with `escape '\\'`. */
export const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

// biome-ignore lint/suspicious/noExplicitAny: these helpers apply to any table's query builder.
type AnyTables = any;
type AnySelect = SelectQueryBuilder<AnyTables, AnyTables, AnyTables>;

/** `lower(column) like %keyword%` for each keyword over each column, combined per `matchAll`. */
export function keywordFilter(
  eb: ExpressionBuilder<AnyTables, AnyTables>,
  keywords: string[],
  columns: string[],
  matchAll: boolean,
) {
  const perKeyword: Expression<SqlBool>[] = keywords.map((keyword) => {
    const pattern = `%${escapeLike(keyword.toLowerCase())}%`;
    return eb.or(columns.map((column) => sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`));
  });
  return matchAll ? eb.and(perKeyword) : eb.or(perKeyword);
}

/**
 * One query gives the page and the total: the count is an uncorrelated subquery, which both engines
 * evaluate once. Only a page past the end, with no row to carry the total, needs a second query.
 * LIMIT and OFFSET are written as literals (they are validated integers): SQLite plans a bound LIMIT
 * far worse, about 4x slower on a small sorted page.
 */
export async function fetchPage<Q extends AnySelect>(
  query: Q,
  list: ListQuery,
  columns: PagingColumns,
): Promise<{ total: number; rows: Awaited<ReturnType<Q['execute']>> }> {
  let filtered: AnySelect = query;
  if (list.keywords.length > 0 && columns.search.length > 0) {
    filtered = filtered.where((eb) => keywordFilter(eb, list.keywords, columns.search, list.matchAll));
  }
  const counted = filtered.clearSelect().select((eb) => eb.fn.countAll().as('count'));
  const sortColumn = columns.sort[list.orderBy] ?? columns.key;
  const rows = (await filtered
    .select(counted.as(TOTAL_COLUMN))
    .orderBy(sql.ref(sortColumn), list.order)
    .orderBy(sql.ref(columns.key), list.order)
    .limit(sql.lit(Math.trunc(list.per)))
    .offset(sql.lit(Math.trunc((list.page - 1) * list.per)))
    .execute()) as Record<string, unknown>[];
  let total = 0;
  if (rows.length > 0) {
    total = Number(rows[0]?.[TOTAL_COLUMN]);
    for (const row of rows) delete row[TOTAL_COLUMN];
  } else if (list.page > 1) {
    const countRow = await counted.executeTakeFirst();
    total = Number((countRow as { count?: unknown } | undefined)?.count ?? 0);
  }
  return { total, rows: rows as never };
}

const TOTAL_COLUMN = '__total_count';
