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
      const insert = new RowsStatement(
        ['text', 'text', 'bigint'],
        () => `insert into change_revisions (organisation_key, entity_type, revision)
          select v.column1, v.column2, v.column3 from v`,
      );
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
  });
}
