/**
 * One page of a list query: keyword search over named columns, a sort on a declared field with the
 * key as tie-break (so paging never repeats or skips a row), and the total count. Works on any
 * Kysely select over any table, on both engines.
 */
import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import type { ListQuery } from '../core/list-query.ts';
import { QueryCache, type QueryValues } from './prepared.ts';
import type { Executor } from './store.ts';

export interface PagingColumns {
  /** field name (as in `order_by`) -> column reference */
  sort: Record<string, string>;
  /** Column that breaks ties: the resource key. */
  key: string;
  /** Columns a keyword may match (case-insensitive substring). */
  search: string[];
  /**
   * A column of tags (stored as a JSON array, core/tags.ts) a keyword may match too: as a substring of
   * the comma-joined tags the API answers, never of the JSON text's quotes and brackets.
   */
  tags?: string;
}

/** Escapes LIKE wildcards, for use with `escape '\\'`. */
export const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

// biome-ignore lint/suspicious/noExplicitAny: these helpers apply to any table's query builder.
type AnyTables = any;
type AnySelect = SelectQueryBuilder<AnyTables, AnyTables, AnyTables>;

/** LIKE patterns for search keywords: case-insensitive substrings. */
const keywordPatterns = (keywords: string[]): string[] =>
  keywords.map((keyword) => `%${escapeLike(keyword.toLowerCase())}%`);

/**
 * The text a keyword is found as in stored tags (a JSON array of comma-free strings, core/tags.ts) when
 * it is a substring of the comma-joined tags the API answers: each part JSON-escaped, and each comma
 * the `","` between two elements. It is matched against the array's text without its brackets.
 */
function tagsPattern(keyword: string): string {
  return keyword
    .split(',')
    .map((part) => JSON.stringify(part).slice(1, -1))
    .join('","');
}

/** LIKE patterns for search keywords over a tags column (PagingColumns.tags). */
const tagPatterns = (keywords: string[]): string[] =>
  keywords.map((keyword) => `%${escapeLike(tagsPattern(keyword.toLowerCase()))}%`);

/** Search keywords as LIKE patterns: over text columns, and over a tags column where there is one. */
export interface KeywordPatterns {
  text: readonly (string | number | null)[];
  tags?: readonly (string | number | null)[] | undefined;
}

/** The patterns of `keywords` for searching `columns`. */
export const searchPatterns = (keywords: string[], columns: Pick<PagingColumns, 'tags'>): KeywordPatterns => ({
  text: keywordPatterns(keywords),
  tags: columns.tags === undefined ? undefined : tagPatterns(keywords),
});

const like = (expression: Expression<unknown>, pattern: string | number | null | undefined) =>
  sql<SqlBool>`lower(${expression}) like ${pattern} escape '\\'`;

/**
 * `lower(column) like pattern` for each keyword over each column (and its tags pattern over the tags
 * column), combined per `matchAll`.
 */
export function keywordFilter(
  eb: ExpressionBuilder<AnyTables, AnyTables>,
  patterns: KeywordPatterns,
  columns: Pick<PagingColumns, 'search' | 'tags'>,
  matchAll: boolean,
) {
  const tags = columns.tags === undefined ? undefined : sql.ref(columns.tags);
  const perKeyword: Expression<SqlBool>[] = patterns.text.map((pattern, i) =>
    eb.or([
      ...columns.search.map((column) => like(sql.ref(column), pattern)),
      ...(tags ? [like(sql`substr(${tags}, 2, length(${tags}) - 2)`, patterns.tags?.[i])] : []),
    ]),
  );
  return matchAll ? eb.and(perKeyword) : eb.or(perKeyword);
}

/** What a list is drawn from: a query built only from `values`, used as parameters (see prepared.ts). */
export interface ListSource {
  /** Names the query: the same name must build the same SQL from values of the same shape. */
  name: string;
  values: QueryValues;
  build(db: Executor, values: QueryValues): AnySelect;
  columns: PagingColumns;
}

const pages = new QueryCache();

/**
 * The number of rows before a page, or undefined when it is beyond any store: no table holds 2^53
 * rows, so such a page is past the end (empty, with the total; docs/api.md, "Bad input"), and an
 * OFFSET that large is not written into SQL, where the engines refuse it or read it as a float.
 */
export function pageOffset(page: number, per: number): number | undefined {
  const offset = (Math.trunc(page) - 1) * Math.trunc(per);
  return Number.isSafeInteger(offset) && offset >= 0 ? offset : undefined;
}

/**
 * One page and the total in one query: the count is an uncorrelated subquery, which both engines
 * evaluate once; only a page past the end, with no row to carry the total, needs a second query.
 * LIMIT and OFFSET are literals (validated integers): SQLite plans a bound LIMIT about 4x slower.
 * The compiled SQL is kept per shape, so a page costs about what its query costs to run.
 */
export async function fetchPage<Row>(
  db: Executor,
  source: ListSource,
  list: ListQuery,
): Promise<{ total: number; rows: Row[] }> {
  const { columns } = source;
  const searching = list.keywords.length > 0 && (columns.search.length > 0 || columns.tags !== undefined);
  const patterns = searching ? searchPatterns(list.keywords, columns) : undefined;
  const values: QueryValues = { ...source.values, __keywords: patterns?.text, __tags: patterns?.tags };
  const filtered = (v: QueryValues) => {
    const query = source.build(db, v);
    const text = v.__keywords as string[] | undefined;
    const tags = v.__tags as string[] | undefined;
    return text ? query.where((eb) => keywordFilter(eb, { text, tags }, columns, list.matchAll)) : query;
  };
  const counted = (v: QueryValues) =>
    filtered(v)
      .clearSelect()
      .select((eb) => eb.fn.countAll().as('count'));
  const sortColumn = columns.sort[list.orderBy] ?? columns.key;
  const offset = pageOffset(list.page, list.per);
  const shape = `${source.name}|${list.matchAll}|${sortColumn}|${list.order}|${list.per}|${offset}`;
  const rows =
    offset === undefined
      ? []
      : ((await pages.execute(db, shape, values, (v) =>
          filtered(v)
            .select(counted(v).as(TOTAL_COLUMN))
            .orderBy(sql.ref(sortColumn), list.order)
            .orderBy(sql.ref(columns.key), list.order)
            .limit(sql.lit(Math.trunc(list.per)))
            .offset(sql.lit(offset)),
        )) as Record<string, unknown>[]);
  let total = 0;
  // The total stays on the rows as an extra column: presenters pick their fields by name, and deleting
  // it would turn every row into a slow dictionary-mode object.
  if (rows.length > 0) {
    total = Number(rows[0]?.[TOTAL_COLUMN]);
  } else if (list.page > 1) {
    const [countRow] = (await pages.execute(db, `${source.name}|${list.matchAll}|count`, values, counted)) as {
      count?: unknown;
    }[];
    total = Number(countRow?.count ?? 0);
  }
  return { total, rows: rows as Row[] };
}

const TOTAL_COLUMN = '__total_count';
