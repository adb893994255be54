/**
 * The store: one Kysely instance over SQLite or PostgreSQL, migrated on open.
 */

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type CompiledQuery, Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import { ChangeFeed, type EntityChange } from '../core/change-feed.ts';
import { oncePerMinute } from '../core/log-limit.ts';
import { PostgresChangeLink } from './change-link.ts';
import {
  createDialect,
  type Engine,
  engineOf,
  type SqliteSynchronous,
  sqlitePath,
  writeToNewSpace,
} from './dialect.ts';
import type { Db, Executor, Tx } from './executor.ts';
import { applyStoreBounds, StoreFaults } from './faults.ts';
import { MIGRATIONS } from './migrations/index.ts';
import { SqliteStoreDialect } from './sqlite-dialect.ts';
import type { Database } from './tables.ts';

export type { Db, Executor, Tx } from './executor.ts';

export interface Store {
  readonly db: Db;
  readonly engine: Engine;
  /** Runs `work` in one transaction: every change in it commits together or not at all. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * The rows of a read, at once when the store can give them without waiting (SQLite with its one
   * connection free), else undefined: for small reads on every request, where the query layer's own
   * cost would exceed the read's.
   */
  readNow<R>(query: CompiledQuery): R[] | undefined;
  /** The changes made to entities, told once they commit (noteChange), here and by other instances. */
  readonly changes: ChangeFeed;
  ping(): Promise<void>;
  /** The write faults (a full disk, a read-only database) seen since writes were last taken again. */
  readonly faults: StoreFaults;
  /**
   * A small write that commits (it keeps the time in server_secrets) and needs new space
   * (writeToNewSpace), to learn whether writes are taken again after a write fault; a success clears
   * the fault.
   */
  probeWrite(): Promise<void>;
  close(): Promise<void>;
}

/** The row of server_secrets that probeWrite rewrites: the time of the last probe, no secret. */
const WRITE_PROBE = 'write_probe';

/** How often a SQLite store looks for changes made by other processes on its file. */
const SQLITE_WATCH_MS = 1000;

/** A change as it is noted: who made it is known from where. */
export type NotedChange = Omit<EntityChange, 'remote'>;

interface Noting {
  feed: ChangeFeed;
  link: PostgresChangeLink | undefined;
}

/** The store of each database handle, and the changes noted so far in each open transaction. */
const notingOf = new WeakMap<object, Noting>();
const notedIn = new WeakMap<object, NotedChange[]>();

/**
 * Notes a change made through `db`, for the change feed (docs/architecture.md, "The change feed"):
 * in a transaction, it is told once the transaction commits, and not at all if it rolls back;
 * otherwise (a statement of its own, already done), at once.
 */
export async function noteChange(db: Executor, change: NotedChange): Promise<void> {
  const noted = notedIn.get(db);
  if (noted !== undefined) {
    noted.push(change);
    return;
  }
  const noting = notingOf.get(db);
  if (noting === undefined) throw new Error('noteChange: not a database handle or transaction of an open store');
  await noting.link?.announce(db as Tx, [{ ...change, remote: false }]);
  noting.feed.tell([{ ...change, remote: false }]);
}

class StaticMigrations implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return MIGRATIONS;
  }
}

export interface OpenStoreOptions {
  databaseUrl: string;
  schema?: string | undefined;
  sqliteSynchronous?: SqliteSynchronous | undefined;
  /** The most bytes the SQLite file may hold (dialect.ts); past it writes fail as on a full disk. */
  sqliteMaxBytes?: number | undefined;
  /** Told the names of the migrations this opening applied (none when the schema was current). */
  onMigrated?: ((names: string[]) => void) | undefined;
  /** Told when a PostgreSQL connection of the store fails, or a rollback on one (the store goes on; dialect.ts). */
  onConnectionError?: ((error: Error) => void) | undefined;
  /** How long PostgreSQL may take to give a connection (ms; dialect.ts). */
  connectTimeoutMs?: number | undefined;
  /** Told, at most once a minute each, that the disk is full, writes are refused or the database is down (faults.ts). */
  onFault?: ((message: string) => void) | undefined;
}

/** Name of the newest migration: the schema version a current store is at. */
export const LATEST_MIGRATION = Object.keys(MIGRATIONS).sort().at(-1) as string;

/**
 * The store could not be opened or reached: a wrong address, a database that is down, a file that
 * cannot be created. `step` says what was being done; `cause` is the driver's error.
 */
export class StoreUnavailableError extends Error {
  constructor(
    readonly step: 'open' | 'connect' | 'schema',
    override readonly cause: Error,
  ) {
    super(cause.message);
    this.name = 'StoreUnavailableError';
  }
}

async function unavailableOn<T>(step: StoreUnavailableError['step'], work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new StoreUnavailableError(step, error instanceof Error ? error : new Error(String(error)));
  }
}

/**
 * The schema has a migration this release does not know: a newer release ran on it (docs/deployment.md,
 * "Upgrades"). Kysely calls that "corrupted migrations", which sends an operator the wrong way.
 */
export class NewerSchemaError extends Error {
  constructor(readonly migration: string) {
    super(
      `the store's schema was migrated by a newer release of Thingbase (migration ${migration} is unknown to this one): run that release or a newer one, or restore the backup taken before the upgrade`,
    );
    this.name = 'NewerSchemaError';
  }
}

function newerSchema(error: unknown): NewerSchemaError | undefined {
  const match = /previously executed migration (\S+) is missing/.exec(error instanceof Error ? error.message : '');
  return match ? new NewerSchemaError(match[1] as string) : undefined;
}

export async function openStore({
  databaseUrl,
  schema,
  sqliteSynchronous,
  sqliteMaxBytes,
  onMigrated,
  onConnectionError,
  connectTimeoutMs,
  onFault = (message) => process.stderr.write(`${message}\n`),
}: OpenStoreOptions): Promise<Store> {
  const engine = engineOf(databaseUrl);
  if (engine === 'postgres') applyStoreBounds();
  const dialect = await unavailableOn('open', () => {
    if (engine === 'sqlite') {
      const path = sqlitePath(databaseUrl);
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    }
    return createDialect(databaseUrl, schema, sqliteSynchronous, onConnectionError, connectTimeoutMs, sqliteMaxBytes);
  });
  const db = new Kysely<Database>({ dialect });
  try {
    await unavailableOn('connect', () => sql`select 1`.execute(db));
    if (engine === 'postgres' && schema) {
      await unavailableOn('schema', () => sql`create schema if not exists ${sql.id(schema)}`.execute(db));
    }
    // With an explicit schema, the migrator's own tables live there too: without it, Kysely may find
    // another schema's migration tables in the same database and skip creating its own.
    const migrator = new Migrator({
      db,
      provider: new StaticMigrations(),
      ...(engine === 'postgres' && schema ? { migrationTableSchema: schema } : {}),
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw newerSchema(error) ?? error;
    onMigrated?.((results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName));
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const changes = new ChangeFeed();
  const link =
    engine === 'postgres' ? new PostgresChangeLink(databaseUrl, schema, changes, connectTimeoutMs) : undefined;
  try {
    await unavailableOn('connect', () => link?.start());
  } catch (error) {
    await db.destroy();
    throw error;
  }
  notingOf.set(db, { feed: changes, link });
  if (link) changes.setCatchUp(() => link.catchUp());
  // On SQLite, other processes on the same file (the command line, a second server) tell nothing: a
  // change of the file's data version says that one of them changed something.
  let watch: NodeJS.Timeout | undefined;
  if (dialect instanceof SqliteStoreDialect) {
    let version = dialect.dataVersion();
    const catchUp = () => {
      const now = dialect.dataVersion();
      if (now === version) return;
      version = now;
      changes.tellEverything();
    };
    changes.setCatchUp(catchUp);
    // A read that fails (the file unreadable for a while, an I/O error) must not end the process: it
    // is said once a minute, and the next second tries again.
    const watchFailed = oncePerMinute<'watch'>(onFault);
    watch = setInterval(() => {
      try {
        catchUp();
      } catch (error) {
        watchFailed(
          'watch',
          `the SQLite store could not read its data version (${(error as Error).message}); changes by other processes are seen once it can`,
        );
      }
    }, SQLITE_WATCH_MS).unref();
  }
  const faults = new StoreFaults(onFault);
  return {
    db,
    engine,
    changes,
    faults,
    transaction: async (work) => {
      let committed: EntityChange[] | undefined;
      let result: Awaited<ReturnType<typeof work>>;
      try {
        result = await db.transaction().execute(async (tx) => {
          const noted: NotedChange[] = [];
          notedIn.set(tx, noted);
          const value = await work(tx);
          if (noted.length > 0) {
            committed = noted.map((change) => ({ ...change, remote: false }));
            await link?.announce(tx, committed);
          }
          return value;
        });
      } catch (error) {
        faults.note(error);
        throw error;
      }
      faults.wrote();
      if (committed) changes.tell(committed);
      return result;
    },
    readNow: dialect instanceof SqliteStoreDialect ? (query) => dialect.driver.readIfIdle(query) : () => undefined,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    probeWrite: async () => {
      try {
        await db.transaction().execute(async (tx) => {
          await tx
            .insertInto('server_secrets')
            .values({ name: WRITE_PROBE, value: new Date().toISOString() })
            .onConflict((oc) => oc.column('name').doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })))
            .execute();
          await writeToNewSpace(tx, WRITE_PROBE);
        });
      } catch (error) {
        faults.note(error);
        throw error;
      }
      faults.probed();
    },
    close: async () => {
      if (watch) clearInterval(watch);
      await link?.close();
      await db.destroy();
    },
  };
}
