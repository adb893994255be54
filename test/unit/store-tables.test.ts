import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore } from '../../src/store/store.ts';
import { type Database, STORE_TABLES, type StoreTable } from '../../src/store/tables.ts';

/**
 * Does not compile while a table of the Database interface is missing from STORE_TABLES (the order
 * `thingbase copy-store` copies in): the missing table is named in the error.
 */
const everyTableListed: Record<Exclude<keyof Database, StoreTable>, never> = {};

describe('the store tables list', () => {
  it('when a table is in the Database interface then it is in STORE_TABLES, once', () => {
    assert.deepEqual(everyTableListed, {});
    assert.equal(new Set(STORE_TABLES).size, STORE_TABLES.length, 'no table twice');
  });

  it('when the migrations have run then the tables they made are exactly STORE_TABLES', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'thingbase-tables-')), 'thingbase.db');
    const store = await openStore({ databaseUrl: `sqlite:${path}` });
    try {
      const { rows } = await sql<{ name: string }>`
        select name from sqlite_master
        where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'`.execute(store.db);
      assert.deepEqual(rows.map((r) => r.name).sort(), [...STORE_TABLES].sort());
    } finally {
      await store.close();
    }
  });
});
