/** components/points.ts: whether a chart's columns already hold an event taken live during a read. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { holdsPoint } from '../../console/src/components/points.ts';

const columns = {
  metrics: ['a flow', 'a level', 'b flow'],
  x: [10, 20, 20, 30],
  ys: [
    [1, 2, 3, 4],
    [null, 5, null, 6],
    [7, null, 8, null],
  ],
};
const values = (given: (number | null | undefined)[]) => (column: number) => given[column];

describe('holdsPoint', () => {
  it('when a point at that time has those values then it is held', () => {
    assert.equal(holdsPoint(columns, 20, values([2, 5, null])), true);
    assert.equal(holdsPoint(columns, 20, values([3, null, 8])), true);
    assert.equal(holdsPoint(columns, 30, values([4, 6, null])), true);
  });

  it('when the values differ in any column that matters then it is not held', () => {
    assert.equal(holdsPoint(columns, 20, values([2, 5, 9])), false);
    assert.equal(holdsPoint(columns, 30, values([4, null, null])), false);
  });

  it('when a column does not matter then its value is not compared', () => {
    assert.equal(holdsPoint(columns, 20, values([3, undefined, undefined])), true);
    assert.equal(holdsPoint(columns, 10, values([undefined, undefined, 7])), true);
  });

  it('when no point has that time then it is not held', () => {
    assert.equal(holdsPoint(columns, 25, values([2, 5, null])), false);
    assert.equal(holdsPoint(columns, 40, values([undefined, undefined, undefined])), false);
    assert.equal(holdsPoint({ x: [], ys: [] }, 10, values([])), false);
  });
});
