/**
 * Everything that differs between SQLite and PostgreSQL lives here, so the rest of the code
 * runs one query path on both engines.
 */
import { closeSync, openSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  type RawBuilder,
  type SchemaMetadata,
  type SqlBool,
  sql,
  type TableMetadata,
} from 'kysely';
import type pg from 'pg';
import { mergeSlotStatsText } from '../events/slot-stats.ts';
import type { Executor } from './executor.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, StoreTimeoutError, statementWaitMs } from './faults.ts';
import { pgDriver } from './pg-driver.ts';
import { runCompiled } from './prepared.ts';
import { EachRow, SqliteStoreDialect } from './sqlite-dialect.ts';

export type Engine = 'sqlite' | 'postgres';

export function engineOf(databaseUrl: string): Engine {
  return databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres';
}

export function sqlitePath(databaseUrl: string): string {
  const path = databaseUrl.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  return path === '' ? ':memory:' : path;
}

export type SqliteSynchronous = 'FULL' | 'NORMAL';

/**
 * Makes an empty file readable and writable by its owner only (0600), unless it exists already. A
 * SQLite store and its backups hold the sealed secrets (keys, tokens' hashes), and SQLite gives its
 * write-ahead log and journals the mode of their database file (docs/deployment.md, "Backup and
 * restore"). An existing file keeps its mode.
 */
export function createPrivateFile(path: string): void {
  if (path === ':memory:') return;
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** The pages of `maxBytes` in the file's page size: what `max_page_count` is given for a size limit. */
export function sqliteMaxPages(database: BetterSqlite3.Database, maxBytes: number): number {
  return Math.max(1, Math.floor(maxBytes / (database.pragma('page_size', { simple: true }) as number)));
}

export function createDialect(
  databaseUrl: string,
  schema?: string,
  synchronous: SqliteSynchronous = 'FULL',
  onConnectionError: (error: Error) => void = () => {},
  connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
  sqliteMaxBytes?: number,
): Dialect {
  if (engineOf(databaseUrl) === 'sqlite') {
    createPrivateFile(sqlitePath(databaseUrl));
    const database = new BetterSqlite3(sqlitePath(databaseUrl));
    // A new file gives the pages that deleted rows free back to the file system a few at a time
    // (reclaimFreePages, docs/storage.md). Only a file without tables takes it: an existing one keeps
    // its mode, and reuses its free pages for new rows instead.
    // Set on an empty file only: on one with tables the pragma still writes the file's header, which
    // other connections to the file take for a change of data (store.ts, the data version watch).
    if (database.pragma('page_count', { simple: true }) === 0) database.pragma('auto_vacuum = INCREMENTAL');
    database.pragma('journal_mode = WAL');
    // FULL (default): a commit is on disk before it is acknowledged, even across a power cut. NORMAL
    // keeps commits safe when the process dies but not when the machine loses power, and saves a disk
    // flush per transaction.
    database.pragma(`synchronous = ${synchronous}`);
    // No wait of SQLite's own for another process's lock: it would hold the thread. Queries wait
    // between tries instead (sqlite-dialect.ts, SqliteConnection.executeQuery).
    database.pragma('busy_timeout = 0');
    database.pragma('foreign_keys = ON');
    // Sorts and temporary indexes stay in memory instead of temporary files.
    database.pragma('temp_store = MEMORY');
    // The log is copied into the database once it holds 10,000 pages (40 MB) rather than SQLite's
    // 1,000. Every ingestion transaction rewrites the newest index page of each thing it touches, and
    // a checkpoint copies each page once however often the log holds it, so a longer log copies far
    // fewer pages: commits of 700 events took about a quarter less time (docs/benchmarks-history.md,
    // "morning session").
    database.pragma('wal_autocheckpoint = 10000');
    // A file that may not grow past a size (SQLITE_MAX_SIZE_MB): a write that would is SQLITE_FULL,
    // refused as on a full disk (store/faults.ts), and pages freed by deletions are used again.
    if (sqliteMaxBytes !== undefined) database.pragma(`max_page_count = ${sqliteMaxPages(database, sqliteMaxBytes)}`);
    // Searches compare lower(column) with lowered keywords (store/paging.ts). SQLite's own lower() folds
    // only ASCII letters, so `élan` would not find `Élan` as it does on PostgreSQL; lower() is used for
    // nothing else (no index or constraint holds it), so it is replaced by JavaScript's.
    database.function('lower', { deterministic: true }, (text: unknown) =>
      typeof text === 'string' ? text.toLowerCase() : text,
    );
    // The event writer adds each transaction's counts to the stored rollups in one upsert, merging
    // with what a slot holds in place (events/rollups.ts).
    database.function('merge_slot_stats', { deterministic: true }, (stored, added) =>
      mergeSlotStatsText(String(stored), String(added)),
    );
    return new SqliteStoreDialect(database);
  }
  const pool = new (pgDriver().Pool)({
    connectionString: databaseUrl,
    max: 10,
    // A database that hangs must not hold requests waiting for a connection (docs/configuration.md,
    // DATABASE_CONNECT_TIMEOUT_MS): opening one, or waiting for one of the pool, fails after this.
    connectionTimeoutMillis: connectTimeoutMs,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  // A connection that fails (the database restarted, crashed, failed over, or ended it; the network
  // cut it) is an 'error' event: of the pool while idle, of the client itself while checked out (in a
  // query or a transaction). Unheard, either ends the process. pg drops that connection and the next
  // query opens a new one; until the database answers again, queries fail with 503 and /readyz says so
  // (docs/operations.md, "When the database fails").
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => {
    client.on('error', onConnectionError);
    watchStatements(client);
  });
  return new StorePostgresDialect({ pool }, onConnectionError);
}

/**
 * Bounds each statement of `client` sent under a deadline or statement timeout (store/faults.ts): one
 * still unanswered then closes the connection, which fails the statement (and any transaction on it,
 * which the database rolls back) and takes the connection out of the pool. Cancelling on the server
 * would need the server to answer, which a hung one does not.
 */
function watchStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  let abandoned = false;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const waitMs = statementWaitMs();
    const result = query(...args);
    if (waitMs === undefined || !(result instanceof Promise)) return result;
    const timer = setTimeout(() => {
      abandoned = true;
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }, waitMs);
    return result.then(
      (value) => {
        clearTimeout(timer);
        return value;
      },
      (error: unknown) => {
        clearTimeout(timer);
        throw abandoned ? new StoreTimeoutError('the database did not answer in time', { cause: error }) : error;
      },
    );
  };
}

/**
 * What Kysely's migrator asks of the database: its schemas, and whether its own tables exist. Kysely's
 * PostgreSQL introspector answers the second by reading every column of every table of every schema,
 * naming each schema to has_schema_privilege, so a schema dropped meanwhile by anyone sharing the
 * database (another application, another Thingbase on its own DATABASE_SCHEMA) fails it, and the start
 * with it. This one reads the tables of the store's own schema (the search path's first) by catalog
 * ids; it answers no columns.
 */
class StoreSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<SchemaMetadata>`select nspname as name from pg_catalog.pg_namespace`.execute(this.db);
    return rows;
  }

  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string; schema: string; kind: string }>`
      select c.relname as name, n.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p')`.execute(this.db);
    return rows.map((r) => ({ name: r.name, schema: r.schema, isView: r.kind === 'v', columns: [] }));
  }

  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}

/**
 * A ROLLBACK that fails (its connection died with the statement that failed) must not take the place
 * of the error that caused it: that error is what the caller is answered by. The connection, broken,
 * leaves the pool on release.
 */
class StorePostgresDriver extends PostgresDriver {
  constructor(
    config: PostgresDialectConfig,
    private readonly onRollbackError: (error: Error) => void,
  ) {
    super(config);
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.rollbackTransaction(connection);
    } catch (error) {
      this.onRollbackError(new Error(`a rollback failed (${(error as Error).message})`, { cause: error }));
    }
  }
}

class StorePostgresDialect extends PostgresDialect {
  constructor(
    private readonly config: PostgresDialectConfig,
    private readonly onRollbackError: (error: Error) => void,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return new StorePostgresDriver(this.config, this.onRollbackError);
  }

  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new StoreSchemaIntrospector(db);
  }
}

/** Runs `work`; a broken UNIQUE constraint in it becomes `conflict()` (a 409) rather than a failure. */
export async function uniqueOr<T>(work: () => Promise<T>, conflict: () => Error): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict();
    throw error;
  }
}

/** True when a failed statement broke a UNIQUE or PRIMARY KEY constraint. */
export function isUniqueViolation(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const code = (error as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Which engine a Kysely instance (or a migration's) talks to. */
export function engineOfDb(db: { getExecutor(): { adapter: object } }): Engine {
  return db.getExecutor().adapter.constructor.name.startsWith('Sqlite') ? 'sqlite' : 'postgres';
}

/** Column type of an auto-incrementing integer primary key. */
export function autoIncrementType(engine: Engine): 'integer' | 'bigserial' {
  return engine === 'sqlite' ? 'integer' : 'bigserial';
}

/** The text value of a member of a JSON object stored as text (NULL when absent). */
export function jsonMemberText(engine: Engine, column: string, member: string): RawBuilder<string | null> {
  return engine === 'sqlite'
    ? sql`json_extract(${sql.ref(column)}, ${`$.${JSON.stringify(member)}`})`
    : sql`(${sql.ref(column)}::jsonb ->> ${member})`;
}

/** Whether a JSON array stored as text holds this string. */
export function jsonArrayHasText(engine: Engine, column: string, value: string): RawBuilder<boolean> {
  return engine === 'sqlite'
    ? sql`exists (select 1 from json_each(${sql.ref(column)}) where json_each.value = ${value})`
    : sql`(${sql.ref(column)}::jsonb @> jsonb_build_array(${value}::text))`;
}

/** Beyond any integer a row holds (a time in ms, an id): bounds that leave no row out. */
const INTEGER_END = Number.MAX_SAFE_INTEGER;

/**
 * The rows after a position in (time, id) order (`'>'`; before it, for a read in the other order:
 * `'<'`), as one row comparison, `(time, id) > (at, id)`, which both engines read as a range of an
 * index on (..., time, id) that starts at the position, in the index's order (docs/storage.md,
 * "Reading from a position"). On PostgreSQL the two columns are also bounded on both sides by the ends
 * of the integers they hold: that leaves no row out, and with statistics the planner sees so, but on a
 * table it has no statistics of (filled and not analysed yet) it takes each pair of bounds for a narrow
 * range and expects a few rows, which it reads in index order, instead of expecting a share of the
 * thing's events too small to be worth reading in order and gathering all the rows after the position
 * to sort them for every page. SQLite plans by the index alone, and might start its range at such a
 * bound rather than at the position: it has the row comparison only.
 */
export function beyondPosition(
  engine: Engine,
  [time, id]: readonly [string, string],
  direction: '>' | '<',
  [at, atId]: readonly [number, number],
): RawBuilder<SqlBool> {
  const beyond = sql<SqlBool>`(${sql.ref(time)}, ${sql.ref(id)}) ${sql.raw(direction)} (${at}, ${atId})`;
  if (engine === 'sqlite') return beyond;
  const bounded = (column: string) =>
    sql`${sql.ref(column)} between ${sql.lit(-INTEGER_END)} and ${sql.lit(INTEGER_END)}`;
  return sql<SqlBool>`${bounded(time)} and ${bounded(id)} and ${beyond}`;
}

/**
 * A JSON object stored as text, as the JSON functions below read it. PostgreSQL parses it here, once per
 * row only in a subquery it keeps apart (`keptApart`): merged into the outer query, the parse is
 * repeated for every function that reads it, three times the cost with four of them.
 */
export function jsonOf(engine: Engine, column: string): RawBuilder<unknown> {
  return engine === 'sqlite' ? sql`${sql.ref(column)}` : sql`${sql.ref(column)}::jsonb`;
}

/**
 * Ends a subquery the planner must not merge into the query around it, so that what it computes is
 * computed once per row: `offset 0` on PostgreSQL; on SQLite a limit, which keeps a subquery of an
 * aggregate query apart.
 */
export function keptApart(engine: Engine): RawBuilder<unknown> {
  return engine === 'sqlite' ? sql`limit -1` : sql`offset 0`;
}

/** Whether a JSON object (`jsonOf`) has a member of this name. */
export function jsonHasMember(engine: Engine, json: string, member: string): RawBuilder<boolean> {
  return engine === 'sqlite'
    ? sql`(json_type(${sql.ref(json)}, ${`$.${JSON.stringify(member)}`}) is not null)`
    : sql`((${sql.ref(json)} -> cast(${member} as text)) is not null)`;
}

/**
 * The number at `index` of the array that is a member of a JSON object (`jsonOf`); NULL when absent or
 * null. On PostgreSQL a double, or with `exact` a numeric, whose sums do not overflow as doubles' do
 * (an error there, where SQLite's sum is Infinity).
 */
export function jsonArrayNumber(
  engine: Engine,
  json: string,
  member: string,
  index: number,
  exact = false,
): RawBuilder<number | null> {
  if (engine === 'sqlite') return sql`json_extract(${sql.ref(json)}, ${`$.${JSON.stringify(member)}[${index}]`})`;
  const type = exact ? sql`numeric` : sql`double precision`;
  return sql`cast(${sql.ref(json)} -> cast(${member} as text) ->> ${sql.lit(index)} as ${type})`;
}

/** Whether a PostgreSQL error is a number out of its type's range (a sum of doubles past the largest). */
export const isOutOfRange = (error: unknown): boolean => (error as { code?: unknown })?.code === '22003';

/** Whether a bigint column holds one of these numbers, however many: one parameter on either engine. */
export function inNumberList(engine: Engine, column: string, values: readonly number[]): RawBuilder<boolean> {
  return engine === 'sqlite'
    ? sql`${sql.ref(column)} in (select value from json_each(${JSON.stringify(values)}))`
    : sql`${sql.ref(column)} = any(cast(${arrayLiteral(values)} as bigint[]))`;
}

export type ColumnType = 'bigint' | 'text';

/**
 * A column as a PostgreSQL array literal, made by `JSON.stringify`: for finite numbers, null and
 * strings without control characters or lone surrogates, JSON's array text is the literal once its
 * brackets are braces, since both escape only `"` and `\` inside quotes. Most columns are JSON texts,
 * which never hold such characters, and native stringifying costs a fraction of the driver's escaping
 * per element. Any other escape in the text (a `\n`, a `\u`) leaves the column to the driver.
 */
export function arrayLiteral(values: readonly unknown[]): unknown {
  for (const value of values) {
    // Anything else (an object, a non-finite number...) JSON writes otherwise than the driver would.
    if (value !== null && typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value))) {
      return values;
    }
  }
  const json = JSON.stringify(values);
  if (/\\[^"\\]/.test(json)) return values;
  return `{${json.slice(1, -1)}}`;
}

/**
 * A statement over rows given column by column, compiled once per engine: the rows are the relation
 * `v(column1, column2, ...)`, defined in a WITH clause ahead of `text`, and its text does not depend
 * on the number of rows. PostgreSQL runs it once over all the rows, unnesting one typed array per
 * column (one parameter each); SQLite runs it once per row, `v` being that row (its connection's
 * prepared statement, run in a loop: sqlite-dialect.ts, EachRow), and answers the rows of every run in
 * turn. So a statement must mean the same run over the rows together or one by one: no aggregate or
 * order across them, nor a row that looks at another. `extra` parameters follow, which `text` places
 * with `extra(n)`. For the writer's statements, run in every transaction, where building and compiling
 * a query each time would cost more than running it.
 */
export class RowsStatement {
  private readonly texts = new Map<Engine, string>();

  constructor(
    private readonly types: readonly ColumnType[],
    private readonly text: (extra: (n: number) => string) => string,
  ) {}

  async run<R>(db: Executor, columns: readonly (readonly unknown[])[], extra: readonly unknown[] = []): Promise<R[]> {
    const engine = engineOfDb(db);
    let text = this.texts.get(engine);
    if (text === undefined) {
      const names = this.types.map((_, i) => `column${i + 1}`);
      const rows =
        engine === 'postgres'
          ? `select * from unnest(${this.types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) as u(${names.join(', ')})`
          : // better-sqlite3 binds every number as a REAL: a bigint column is made an INTEGER, as its JSON
            // number or PostgreSQL's bigint would be.
            `select ${this.types.map((t, i) => `${t === 'bigint' ? 'cast(? as integer)' : '?'} as ${names[i]}`).join(', ')}`;
      const firstExtra = this.types.length + 1;
      text = `with v as (${rows}) ${this.text((n) => (engine === 'postgres' ? `$${firstExtra + n}` : '?'))}`;
      this.texts.set(engine, text);
    }
    if (engine === 'postgres') {
      return runCompiled<R>(db, CompiledQuery.raw(text, [...columns.map(arrayLiteral), ...extra]));
    }
    const each = new EachRow(columns, extra);
    if (each.length === 0) return [];
    return runCompiled<R>(db, CompiledQuery.raw(text, [each]));
  }
}

/**
 * Locks the rows a select reads until the transaction ends (PostgreSQL `FOR UPDATE`, optionally `SKIP
 * LOCKED` to pass over rows another instance holds; or `FOR KEY SHARE`, which only keeps them from
 * being deleted, so that what is written refers to rows that still exist). SQLite has one writer at a
 * time: no clause needed.
 */
export function lockRows(engine: Engine, options: { skipLocked?: boolean; mode?: 'update' | 'key share' } = {}) {
  // biome-ignore lint/suspicious/noExplicitAny: applies to any select.
  return <Q extends { forUpdate(): any; forKeyShare(): any; skipLocked(): any }>(query: Q): Q => {
    if (engine === 'sqlite') return query;
    const locked = options.mode === 'key share' ? query.forKeyShare() : query.forUpdate();
    return options.skipLocked ? locked.skipLocked() : locked;
  };
}

/**
 * The rows of a subquery as one text of JSON arrays `[a,b,...],[a,b,...]`, each row's columns being
 * JSON already (numbers, JSON text): reading one string costs far less in the drivers than one row
 * object per row. PostgreSQL joins them in `orderBy` order; SQLite joins them in the order the
 * (ordered) subquery yields them, which is not promised, so readers check it.
 */
export function jsonRowsText(engine: Engine, columns: string[], orderBy: string[]): RawBuilder<string | null> {
  const row = sql`'[' || ${sql.join(
    columns.map((c) => sql.ref(c)),
    sql` || ',' || `,
  )} || ']'`;
  return engine === 'sqlite'
    ? sql`group_concat(${row}, ',')`
    : sql`string_agg(${row}, ',' order by ${sql.join(orderBy.map((c) => sql.ref(c)))})`;
}

/**
 * Gives up to `pages` free pages of a SQLite file in incremental auto-vacuum mode back to the file
 * system, and answers how many free pages remain (docs/storage.md, "What is freed when"). 0 on a file
 * in another mode, whose free pages new rows reuse, and on PostgreSQL, where autovacuum frees dead
 * rows' space for reuse.
 */
export async function reclaimFreePages(db: Executor, pages: number): Promise<number> {
  if (engineOfDb(db) !== 'sqlite') return 0;
  const [mode] = (await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(db)).rows;
  if ((mode as { auto_vacuum: number }).auto_vacuum !== 2) return 0;
  await sql`pragma incremental_vacuum(${sql.lit(pages)})`.execute(db);
  const [free] = (await sql<{ freelist_count: number }>`pragma freelist_count`.execute(db)).rows;
  return (free as { freelist_count: number }).freelist_count;
}

/**
 * Copies what a SQLite write-ahead log holds into the database file, as far as no reader needs it
 * (a passive checkpoint). The log is otherwise copied by whichever commit makes it grow past
 * `wal_autocheckpoint` pages, and that commit waits for the whole copy: a log grown by many deletes
 * takes hundreds of milliseconds. Called between steps of a long run of writes, each copy is of one
 * step's pages. Nothing to do on PostgreSQL.
 */
export async function checkpointLog(db: Executor): Promise<void> {
  if (engineOfDb(db) !== 'sqlite') return;
  await sql`pragma wal_checkpoint(passive)`.execute(db);
}

/**
 * A write that needs space the database did not have before, for the write probe (store.ts) to tell
 * whether a full disk has room again: a row rewritten in place may fit in its page while the disk is
 * still full. On PostgreSQL a row in a temporary table of its own, dropped at commit (a new table's
 * first page is new space). On SQLite the probe's row (`probeRow` of server_secrets) made 256 KiB
 * long, which takes overflow pages (from the free list or by growing the file; written to the log at
 * commit), then short again.
 */
export async function writeToNewSpace(db: Executor, probeRow: string): Promise<void> {
  if (engineOfDb(db) === 'sqlite') {
    await sql`update server_secrets set value = hex(zeroblob(131072)) where name = ${probeRow}`.execute(db);
    await sql`update server_secrets set value = ${new Date().toISOString()} where name = ${probeRow}`.execute(db);
    return;
  }
  await sql`create temporary table thingbase_write_probe (filler text) on commit drop`.execute(db);
  await sql`insert into thingbase_write_probe values (repeat('x', 100))`.execute(db);
}
