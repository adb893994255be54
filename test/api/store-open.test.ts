import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { openStore } from '../../src/store/store.ts';
import { STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');

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
