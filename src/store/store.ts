/**
 * The store: one Kysely instance over SQLite or PostgreSQL, migrated on open.
 */

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type CompiledQuery,
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  sql,
  type Transaction,
} from 'kysely';
import { createDialect, type Engine, engineOf, type SqliteSynchronous, sqlitePath } from './dialect.ts';
import { MIGRATIONS } from './migrations/index.ts';
import { SqliteStoreDialect } from './sqlite-dialect.ts';
import type { Database } from './tables.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Either the database or an open transaction: repositories accept both. */
export type Executor = Kysely<Database> | Transaction<Database>;

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
}

export async function openStore({ databaseUrl, schema, sqliteSynchronous }: OpenStoreOptions): Promise<Store> {
  const engine = engineOf(databaseUrl);
  if (engine === 'sqlite') {
    const path = sqlitePath(databaseUrl);
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  }
  const dialect = createDialect(databaseUrl, schema, sqliteSynchronous);
  const db = new Kysely<Database>({ dialect });
  try {
    if (engine === 'postgres' && schema) {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    }
    // With an explicit schema, the migrator's own tables live there too: without it, Kysely may find
    // another schema's migration tables in the same database and skip creating its own.
    const migrator = new Migrator({
      db,
      provider: new StaticMigrations(),
      ...(engine === 'postgres' && schema ? { migrationTableSchema: schema } : {}),
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
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
