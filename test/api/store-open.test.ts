import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { SqliteStoreDialect } from '../../src/store/sqlite-dialect.ts';
import { openStore } from '../../src/store/store.ts';
import { STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');
const sqlite = STORES.find((s) => s.name === 'sqlite') as NonNullable<(typeof STORES)[number]>;

describe('opening a PostgreSQL store', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  it('when other schemas of the database are made and dropped meanwhile then a fresh store still opens and migrates', async () => {
    if (!postgres) return;
    // Another application, or another Thingbase on its own schema, making and dropping schemas.
    const churn = new pg.Client({ connectionString: postgres.fresh().databaseUrl });
    await churn.connect();
    let stop = false;
    let churned = 0;
    const churning = (async () => {
      while (!stop) {
        const { databaseSchema } = postgres.fresh();
        await churn.query(`create schema "${databaseSchema}"; create table "${databaseSchema}".t (a int, b text)`);
        await churn.query(`drop schema "${databaseSchema}" cascade`);
        churned += 1;
      }
    })();
    const failures: string[] = [];
    try {
      for (let n = 0; n < 10; n++) {
        const settings = postgres.fresh();
        try {
          const store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
          await store.close();
        } catch (error) {
          failures.push((error as Error).message);
        } finally {
          await postgres.dispose(settings);
        }
      }
    } finally {
      stop = true;
      await churning;
      await churn.end();
    }
    assert.ok(churned > 0);
    assert.deepEqual(failures, []);
  });
});

describe('an open SQLite store', () => {
  it('when its watch for changes by other processes cannot read the data version then it says so once and goes on', async () => {
    const faults: string[] = [];
    const store = await openStore({ databaseUrl: sqlite.fresh().databaseUrl, onFault: (m) => faults.push(m) });
    const dataVersion = Object.getOwnPropertyDescriptor(SqliteStoreDialect.prototype, 'dataVersion');
    // Before, the throw in the watch's timer ended the process.
    SqliteStoreDialect.prototype.dataVersion = () => {
      throw new Error('disk I/O error');
    };
    try {
      await sleep(2500);
    } finally {
      Object.defineProperty(SqliteStoreDialect.prototype, 'dataVersion', dataVersion as PropertyDescriptor);
    }
    try {
      const said = faults.filter((m) => /could not read its data version \(disk I\/O error\)/.test(m));
      assert.equal(said.length, 1, faults.join('\n'));
      assert.equal((await store.db.selectFrom('things').select('thing_key').execute()).length, 0, 'the store serves');
    } finally {
      await store.close();
    }
  });
});
