/** dashboards/raw-lines.ts: live events joining a time series' raw lines, during a read and after it. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Columns } from '../../console/src/components/chart-scales.ts';
import { addToLines, joinArrived, type Lines, pick, rawColumns } from '../../console/src/dashboards/raw-lines.ts';

const lines: Lines = { things: ['a', 'b'], metrics: ['flow', 'm.level'], from: 100, to: undefined };

/** Columns of lines: a flow and a level line for each thing, from rows of [time, a flow, a level, b flow, b level]. */
const columnsOf = (rows: (number | null)[][]): Columns => ({
  metrics: ['a flow', 'a m.level', 'b flow', 'b m.level'],
  x: rows.map((r) => r[0] as number),
  ys: [1, 2, 3, 4].map((i) => rows.map((r) => r[i] ?? null)),
});
const rowsOf = (columns: Columns) => columns.x.map((t, i) => [t, ...columns.ys.map((ys) => ys[i] ?? null)]);

describe('raw lines', () => {
  it('when a metric is a path then pick reads nested data', () => {
    assert.equal(pick({ m: { level: 3 } }, 'm.level'), 3);
    assert.equal(pick({ m: 3 }, 'm.level'), undefined);
  });

  it('when a live event comes then it is put in time order in its thing lines, nulls in the others', () => {
    const columns = columnsOf([
      [110, 1, null, null, null],
      [130, null, null, 2, 5],
    ]);
    assert.equal(
      addToLines(columns, lines, { thing_key: 'b', timestamp: 120, data: { flow: 7, m: { level: 8 } } }),
      true,
    );
    assert.deepEqual(rowsOf(columns), [
      [110, 1, null, null, null],
      [120, null, null, 7, 8],
      [130, null, null, 2, 5],
    ]);
  });

  it('when a live event is another thing, before the range or after a saved range then it is not drawn', () => {
    const columns = columnsOf([[110, 1, null, null, null]]);
    assert.equal(addToLines(columns, lines, { thing_key: 'c', timestamp: 120, data: { flow: 1 } }), false);
    assert.equal(addToLines(columns, lines, { thing_key: 'a', timestamp: 99, data: { flow: 1 } }), false);
    assert.equal(
      addToLines(columns, { ...lines, to: 150 }, { thing_key: 'a', timestamp: 151, data: { flow: 1 } }),
      false,
    );
    assert.equal(
      addToLines(columns, { ...lines, to: 150 }, { thing_key: 'a', timestamp: 150, data: { flow: 1 } }),
      true,
    );
    assert.equal(columns.x.length, 2);
    // Columns of other metrics (the widget was just changed) take nothing until read again.
    assert.equal(
      addToLines(columns, { ...lines, metrics: ['flow'] }, { thing_key: 'a', timestamp: 140, data: { flow: 1 } }),
      false,
    );
    assert.equal(columns.x.length, 2);
  });

  it("when events came during a read then each joins from its own thing's last point on", () => {
    // a's read was answered after its event at 140 was stored; b's before its event at 135.
    const columns = columnsOf([
      [120, null, null, 2, null],
      [140, 4, null, null, null],
    ]);
    joinArrived(columns, lines, [
      { thing_key: 'b', timestamp: 135, data: { flow: 3 } },
      { thing_key: 'a', timestamp: 140, data: { flow: 4 } },
      { thing_key: 'a', timestamp: 130, data: { flow: 9 } },
    ]);
    assert.deepEqual(rowsOf(columns), [
      [120, null, null, 2, null],
      [135, null, null, 3, null],
      [140, 4, null, null, null],
    ]);
  });

  it('when an event of the second of its thing last point came during the read then it joins unless the read holds it', () => {
    const columns = columnsOf([[140, 4, null, null, null]]);
    joinArrived(columns, lines, [
      { thing_key: 'a', timestamp: 140, data: { flow: 4 } },
      { thing_key: 'a', timestamp: 140, data: { flow: 5 } },
    ]);
    assert.deepEqual(rowsOf(columns), [
      [140, 4, null, null, null],
      [140, 5, null, null, null],
    ]);
  });

  it('when things are read then their events of one second share a row and a thing sending twice a second keeps both', () => {
    const columns = rawColumns(
      lines,
      ['a flow', 'a m.level', 'b flow', 'b m.level'],
      [
        [
          { timestamp: 110, data: { flow: 1, m: { level: 2 } } },
          { timestamp: 110, data: { flow: 3 } },
          { timestamp: 120, data: { other: 1 } },
          { timestamp: 130, data: { m: { level: 6 } } },
        ],
        [
          { timestamp: 100, data: { flow: 7 } },
          { timestamp: 110, data: { flow: 8, m: { level: 9 } } },
        ],
      ],
    );
    assert.deepEqual(columns.metrics, ['a flow', 'a m.level', 'b flow', 'b m.level']);
    assert.deepEqual(rowsOf(columns), [
      [100, null, null, 7, null],
      [110, 1, 2, 8, 9],
      [110, 3, null, null, null],
      [130, null, 6, null, null],
    ]);
  });
});
