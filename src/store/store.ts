/**
 * The store: one Kysely instance over SQLite or PostgreSQL, migrated on open.
 */

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type CompiledQuery, Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import { createDialect, type Engine, engineOf, type SqliteSynchronous, sqlitePath } from './dialect.ts';
import type { Db, Tx } from './executor.ts';
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
  ping(): Promise<void>;
  close(): Promise<void>;
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
  /** Told the names of the migrations this opening applied (none when the schema was current). */
  onMigrated?: ((names: string[]) => void) | undefined;
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

export async function openStore({
  databaseUrl,
  schema,
  sqliteSynchronous,
  onMigrated,
}: OpenStoreOptions): Promise<Store> {
  const engine = engineOf(databaseUrl);
  const dialect = await unavailableOn('open', () => {
    if (engine === 'sqlite') {
      const path = sqlitePath(databaseUrl);
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    }
    return createDialect(databaseUrl, schema, sqliteSynchronous);
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
    if (error) throw error;
    onMigrated?.((results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName));
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return {
    db,
    engine,
    transaction: (work) => db.transaction().execute(work),
    readNow: dialect instanceof SqliteStoreDialect ? (query) => dialect.driver.readIfIdle(query) : () => undefined,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}
