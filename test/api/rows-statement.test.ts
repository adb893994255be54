/**
 * RowsStatement (src/store/dialect.ts): a statement over rows given column by column, run once over
 * all of them on PostgreSQL and once per row on SQLite. Both must answer the same.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RowsStatement } from '../../src/store/dialect.ts';
import { STORES } from '../support/stores.ts';
import { suiteStore } from '../support/suites.ts';

for (const storeCase of STORES) {
  describe(`RowsStatement (${storeCase.name})`, { skip: storeCase.skip }, () => {
    const open = suiteStore(storeCase);
    const insert = new RowsStatement(
      ['text', 'text', 'bigint'],
      () => `insert into change_revisions (organisation_key, entity_type, revision)
        select v.column1, v.column2, v.column3 from v`,
    );

    it('answers the rows of every row in row order, a bigint column as an integer, the extra parameters after', async () => {
      const { db } = await open();
      const echo = new RowsStatement(
        ['bigint', 'text'],
        (extra) => `select v.column1 || '' as n, v.column2 as t, cast(${extra(0)} as text) as x from v`,
      );
      const rows = await echo.run<{ n: string; t: string; x: string }>(
        db,
        [
          [7, 1_700_000_000_123, 3],
          ['seven', 'late', null],
        ],
        ['extra'],
      );
      // A JS number bound as it is would be a REAL on SQLite, and its text "7.0".
      assert.deepEqual(
        rows.map((r) => [r.n, r.t, r.x]),
        [
          ['7', 'seven', 'extra'],
          ['1700000000123', 'late', 'extra'],
          ['3', null, 'extra'],
        ],
      );
    });

    it('writes every row, and answers nothing for no rows', async () => {
      const { db } = await open();
      assert.deepEqual(await insert.run(db, [[], [], []]), []);
      await insert.run(db, [
        ['rows-a', 'rows-b'],
        ['Thing', 'Thing'],
        [1, 2],
      ]);
      const stored = await db
        .selectFrom('change_revisions')
        .select(['organisation_key', 'revision'])
        .where('organisation_key', 'in', ['rows-a', 'rows-b'])
        .orderBy('organisation_key')
        .execute();
      assert.deepEqual(
        stored.map((r) => [r.organisation_key, Number(r.revision)]),
        [
          ['rows-a', 1],
          ['rows-b', 2],
        ],
      );
    });

    it('in a transaction, sees what the transaction wrote before it, and is undone with it', async () => {
      const { db } = await open();
      const count = new RowsStatement(
        ['text'],
        () => `select count(*) as n from change_revisions r join v on r.organisation_key = v.column1`,
      );
      const keys = ['rows-tx-a', 'rows-tx-b'];
      const counted = (tx: typeof db) => count.run<{ n: number | string }>(tx, [keys]);
      const total = (rows: { n: number | string }[]) => rows.reduce((sum, r) => sum + Number(r.n), 0);
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          await tx
            .insertInto('change_revisions')
            .values({ organisation_key: 'rows-tx-a', entity_type: 'Thing', revision: 1 })
            .execute();
          assert.equal(total(await counted(tx)), 1, "the query layer's insert, seen by the statement");
          await insert.run(tx, [['rows-tx-b'], ['Thing'], [2]]);
          const seen = await tx
            .selectFrom('change_revisions')
            .select('organisation_key')
            .where('organisation_key', 'in', keys)
            .execute();
          assert.equal(seen.length, 2, "the statement's insert, seen by the query layer");
          throw new Error('undo');
        }),
        /undo/,
      );
      assert.equal(total(await counted(db)), 0, 'both inserts undone with the transaction');
    });
  });
}
