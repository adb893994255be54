/**
 * PostgreSQL array literals made by JSON.stringify (arrayLiteral in src/store/dialect.ts), the
 * parameters of RowsStatement on PostgreSQL: a column of values becomes one `{...}` text when JSON's
 * text is the literal, and is otherwise left to the driver. Against PostgreSQL when it is reachable,
 * each literal must read back as the values it was made from.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import pg from 'pg';
import { arrayLiteral } from '../../src/store/dialect.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

describe('PostgreSQL array literals', () => {
  it('when the values are numbers, null and plain text then the literal is their JSON with braces', () => {
    assert.equal(arrayLiteral([]), '{}');
    assert.equal(arrayLiteral([1, 2.5, -3, 0, null]), '{1,2.5,-3,0,null}');
    assert.equal(arrayLiteral(['a', '', 'with space', 'NULL']), '{"a","","with space","NULL"}');
    assert.equal(arrayLiteral(['{"t":1}', 'a,b', '{x}']), '{"{\\"t\\":1}","a,b","{x}"}');
    assert.equal(arrayLiteral(['say "hi"', 'ends\\', 'quote\\"']), '{"say \\"hi\\"","ends\\\\","quote\\\\\\""}');
    assert.equal(arrayLiteral(['é', '日本', '😀']), '{"é","日本","😀"}');
  });

  it('when JSON would write a value otherwise than the literal then the values are left to the driver', () => {
    for (const values of [
      ['line\nbreak'],
      ['tab\t'],
      ['nul\u0000'],
      ['lone \ud800 surrogate'],
      [Number.NaN],
      [Number.POSITIVE_INFINITY],
      [true],
      [{ a: 1 }],
      [[1, 2]],
      [undefined],
      ['ok', 'bell\u0007'],
      // A backslash before anything but a quote or backslash is left to the driver too, though the
      // literal would hold: the check looks at pairs of characters only.
      ['back\\slash'],
    ] as unknown[][]) {
      assert.equal(arrayLiteral(values), values, JSON.stringify(values));
    }
  });

  const postgres = STORES.find((s) => s.name === 'postgres');
  describe('read back by PostgreSQL', { skip: postgres?.skip }, () => {
    let client: pg.Client;
    before(async () => {
      client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
    });
    after(async () => {
      await client?.end();
    });

    const readBack = async (values: readonly unknown[], type: 'text' | 'bigint') => {
      const result = await client.query(`select $1::${type}[] as a`, [arrayLiteral(values)]);
      return result.rows[0].a as unknown[];
    };

    it('when text columns are sent as literals then PostgreSQL reads the same texts', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.option(fc.string({ unit: 'binary', maxLength: 12 }), { nil: null }), { maxLength: 6 }),
          async (values) => {
            const literal = arrayLiteral(values);
            if (typeof literal !== 'string') return;
            assert.deepEqual(await readBack(values, 'text'), values);
          },
        ),
        { numRuns: 300 },
      );
      for (const values of [['say "hi"', 'ends\\', 'quote\\"', '\\\\', '{x}', 'a,b', 'NULL', '', ' padded ']]) {
        assert.equal(typeof arrayLiteral(values), 'string');
        assert.deepEqual(await readBack(values, 'text'), values);
      }
    });

    it('when bigint columns are sent as literals then PostgreSQL reads the same numbers', async () => {
      const values = [0, 1, -1, Date.UTC(2030, 0, 1), Number.MAX_SAFE_INTEGER, null];
      assert.equal(typeof arrayLiteral(values), 'string');
      const read = await readBack(values, 'bigint');
      assert.deepEqual(
        read.map((v) => (v === null ? null : Number(v))),
        values,
      );
    });
  });
});
