/**
 * Kysely's SQLite dialect with a lighter driver. better-sqlite3 has one connection, so queries take
 * turns on it; Kysely's own driver wakes every waiting query whenever the connection is released,
 * which under concurrent requests costs more than the queries themselves. This driver hands the
 * connection to the next waiter in arrival order, and keeps prepared statements by SQL text.
 */
import type BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { Executor } from './executor.ts';

const STATEMENT_CACHE_SIZE = 500;

/** How long a write waits for another process's write lock before it is refused as busy (ms). */
const BUSY_WAIT_MS = 5000;
/** The longest pause between two tries of a query while another process writes (ms). */
const BUSY_PAUSE_MAX_MS = 20;

/** SQLITE_BUSY or one of its extended codes: the file is locked by another connection. */
const isBusy = (error: unknown): boolean => {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
};

type RowMaker = (values: unknown[]) => Record<string, unknown>;
const rowMakers = new WeakMap<BetterSqlite3.Statement, RowMaker>();

/**
 * Rows are read as arrays and made into objects by a function written for the statement's columns:
 * one object literal of a fixed shape, which costs far less than better-sqlite3 building each object
 * member by member. A repeated name keeps its last value, as better-sqlite3's objects do.
 */
function rowMaker(names: string[]): RowMaker {
  const members = names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ');
  return new Function('v', `return { ${members} };`) as RowMaker;
}

/**
 * The parameters of a statement run once per row (store/dialect.ts, RowsStatement), its rows given
 * column by column: given as a query's only parameter, the connection binds each row's values (null
 * for a missing one), then `extra`, and runs the prepared statement for each row in turn. On one
 * in-process connection a prepared statement costs a microsecond or two a run, far less than sending
 * the rows as one JSON text that SQLite must parse and take apart.
 */
export class EachRow {
  constructor(
    readonly columns: readonly (readonly unknown[])[],
    readonly extra: readonly unknown[],
  ) {}

  get length(): number {
    return this.columns[0]?.length ?? 0;
  }

  /** Row `i`'s values, then the extra ones (one array a row: this runs for every row written). */
  values(i: number): unknown[] {
    const values = new Array<unknown>(this.columns.length + this.extra.length);
    let at = 0;
    for (const column of this.columns) values[at++] = column[i] ?? null;
    for (const value of this.extra) values[at++] = value;
    return values;
  }
}

class SqliteConnection implements DatabaseConnection {
  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  constructor(private readonly database: BetterSqlite3.Database) {}

  private prepare(sql: string): BetterSqlite3.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.clear();
      statement = this.database.prepare(sql);
      if (statement.reader) {
        rowMakers.set(statement, rowMaker(statement.columns().map((c) => c.name)));
        statement.raw(true);
      }
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs a query; one outside a transaction that finds the file locked by another process's write
   * (SQLITE_BUSY: the command line, a second server; docs/architecture.md) is tried again after a
   * pause that grows to BUSY_PAUSE_MAX_MS, for BUSY_WAIT_MS in all, and then refused as busy. SQLite's
   * own wait (busy_timeout, 0 here) would hold the thread, and every request, device connection and
   * timer of the server with it, for as long as the other process writes; this wait holds only the
   * connection. A transaction's `begin immediate` waits here, and then holds the lock to its end, so
   * its own statements find the file free.
   */
  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    // The clock is read only once the file is found locked: most queries never are.
    let giveUp: number | undefined;
    for (let pause = 1; ; pause = Math.min(pause * 2, BUSY_PAUSE_MAX_MS)) {
      try {
        return this.executeNow(compiledQuery);
      } catch (error) {
        if (this.database.inTransaction || !isBusy(error)) throw error;
        giveUp ??= performance.now() + BUSY_WAIT_MS;
        if (performance.now() >= giveUp) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  executeNow<R>(compiledQuery: CompiledQuery): QueryResult<R> {
    const statement = this.prepare(compiledQuery.sql);
    const parameters = compiledQuery.parameters as unknown[];
    if (parameters[0] instanceof EachRow) return this.executeEachRow(statement, parameters[0]);
    if (statement.reader) {
      const toRow = rowMakers.get(statement) as RowMaker;
      const arrays = statement.all(parameters) as unknown[][];
      const rows = new Array(arrays.length);
      for (let i = 0; i < arrays.length; i++) rows[i] = toRow(arrays[i] as unknown[]);
      return { rows: rows as R[] };
    }
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /** Runs the statement once per row; the rows it answers, in that order. */
  private executeEachRow<R>(statement: BetterSqlite3.Statement, each: EachRow): QueryResult<R> {
    if (statement.reader) {
      const toRow = rowMakers.get(statement) as RowMaker;
      const rows: R[] = [];
      for (let i = 0; i < each.length; i++) {
        for (const answered of statement.all(each.values(i)) as unknown[][]) rows.push(toRow(answered) as R);
      }
      return { rows };
    }
    let changes = 0;
    for (let i = 0; i < each.length; i++) changes += statement.run(each.values(i)).changes;
    return { numAffectedRows: BigInt(changes), rows: [] };
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered on this store.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on SQLite here');
  }

  /** Whether a transaction is open on the connection: SQLite ends one by itself on some errors. */
  get inTransaction(): boolean {
    return this.database.inTransaction;
  }

  close(): void {
    this.statements.clear();
    this.database.close();
  }
}

export class SqliteDriver implements Driver {
  private busy = false;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly connection: SqliteConnection) {}

  async init(): Promise<void> {}

  /**
   * Runs a read at once, outside the query layer's hand-over, when no query or transaction holds the
   * connection: what it reads is then exactly what a queued read would have read. Undefined when the
   * connection is held.
   */
  readIfIdle<R>(compiledQuery: CompiledQuery): R[] | undefined {
    if (this.busy) return undefined;
    return this.connection.executeNow<R>(compiledQuery).rows;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.busy = true;
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy = false;
  }

  /**
   * Takes the file's write lock at once (`begin immediate`), and reads from then on: a transaction
   * that read first and then wrote found the file changed by another process meanwhile (the command
   * line, docs/architecture.md) and was refused with SQLITE_BUSY_SNAPSHOT, which no wait can mend. In
   * the server the one connection runs one transaction at a time, so taking the lock first costs
   * nothing there. While another process holds the lock the wait is the connection's
   * (SqliteConnection.executeQuery), not the event loop's.
   */
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY
    // while committing): a ROLLBACK then fails with "no transaction is active" and would take the
    // place of the error that caused it, which is what the caller must be answered by.
    if (!(connection as SqliteConnection).inTransaction) return;
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    this.connection.close();
  }
}

/** Kysely's SQLite adapter, holding the store's one connection for queries of its transactions (runInTransaction). */
class SqliteConnectionAdapter extends SqliteAdapter {
  constructor(readonly connection: SqliteConnection) {
    super();
  }
}

/**
 * Runs a compiled query of an open SQLite transaction on the connection at once, and answers its
 * result; undefined for anything else (the database itself, PostgreSQL). The transaction holds the
 * store's one connection until it ends, so its queries can only go there: handing each through the
 * query layer (its executor, the transaction's connection provider chaining queries, the driver's
 * promise) cost more than running one of the event writer's small statements. Queries given this
 * way are plain compiled ones: no plugin is configured that would transform them or their results.
 */
export function runInTransaction<R>(db: Executor, query: CompiledQuery): QueryResult<R> | undefined {
  if (!db.isTransaction) return undefined;
  const adapter = db.getExecutor().adapter;
  return adapter instanceof SqliteConnectionAdapter ? adapter.connection.executeNow<R>(query) : undefined;
}

export class SqliteStoreDialect implements Dialect {
  /** The store's one connection: the driver hands it to queries in turn, the adapter to a transaction's queries. */
  private readonly connection: SqliteConnection;
  readonly driver: SqliteDriver;

  constructor(private readonly database: BetterSqlite3.Database) {
    this.connection = new SqliteConnection(database);
    this.driver = new SqliteDriver(this.connection);
  }

  /**
   * A number that changes whenever another connection (another process on the same file) commits a
   * change to the database; this connection's own commits leave it as it is.
   */
  dataVersion(): number {
    return this.database.pragma('data_version', { simple: true }) as number;
  }

  createDriver(): Driver {
    return this.driver;
  }

  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }

  createAdapter() {
    return new SqliteConnectionAdapter(this.connection);
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's introspector takes a database of any schema.
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}
