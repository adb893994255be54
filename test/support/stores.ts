/**
 * The stores every API test runs against: SQLite always, PostgreSQL when it is reachable.
 * Without PostgreSQL the suite skips with a reason, unless CI is set, where that is a failure.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface StoreCase {
  name: 'sqlite' | 'postgres';
  /** Why this store is skipped here, if it is. */
  skip: string | false;
  /** Settings for one fresh, empty database. */
  fresh(): { databaseUrl: string; databaseSchema?: string };
  /** Removes what fresh() made. */
  dispose(settings: { databaseUrl: string; databaseSchema?: string }): Promise<void>;
}

/**
 * Whether PostgreSQL answers, else why not. A server that refuses the connection is known absent at
 * once; one that is slow to answer (a machine busy with the suite's other files) is asked again, for
 * up to half a minute in all, before its suites are skipped or, under CI, the run fails.
 */
async function postgresReachable(): Promise<string | false> {
  let reason = '';
  for (const timeout of [2000, 8000, 20_000]) {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: timeout });
    try {
      await client.connect();
      await client.query('select 1');
      return false;
    } catch (error) {
      reason = (error as Error).message;
      if (!/timeout/i.test(reason)) break;
    } finally {
      await client.end().catch(() => {});
    }
  }
  return `PostgreSQL at ${POSTGRES_URL} is not reachable (${reason})`;
}

const sqliteCase: StoreCase = {
  name: 'sqlite',
  skip: false,
  fresh: () => ({ databaseUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-test-')), 'thingbase.db')}` }),
  dispose: async () => {},
};

const postgresSkip = await postgresReachable();
if (postgresSkip && process.env.CI) {
  throw new Error(`CI needs PostgreSQL for the test suite: ${postgresSkip}`);
}

const postgresCase: StoreCase = {
  name: 'postgres',
  skip: postgresSkip ? `${postgresSkip}; skipping the PostgreSQL suite` : false,
  fresh: () => ({ databaseUrl: POSTGRES_URL, databaseSchema: `tb_test_${randomBytes(6).toString('hex')}` }),
  dispose: async ({ databaseSchema }) => {
    if (!databaseSchema) return;
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      await client.query(`drop schema if exists "${databaseSchema}" cascade`);
    } finally {
      await client.end();
    }
  },
};

export const STORES: StoreCase[] = [sqliteCase, postgresCase];

/** The environment that points a server process at a store's settings. */
export function storeEnv(settings: { databaseUrl: string; databaseSchema?: string }): Record<string, string> {
  return {
    DATABASE_URL: settings.databaseUrl,
    ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
  };
}
