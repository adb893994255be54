/**
 * A chart legend's values (docs/console.md, "Pages"): at most 6 significant digits, yet every whole
 * digit, in an engine that honours `roundingPriority` and in one that ignores it (Firefox before 116).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { legendNumber } from '../../console/src/components/chart-scales.ts';

/** Formats in a fixed locale, so that the decimal sign is the same wherever the suite runs. */
const current = (options: Intl.NumberFormatOptions) => new Intl.NumberFormat('en-US', options);
/** An engine that ignores `roundingPriority`: what it resolves is the default, significant digits first. */
const ignoring = (options: Intl.NumberFormatOptions) => {
  const { roundingPriority: _ignored, ...rest } = options;
  return new Intl.NumberFormat('en-US', rest);
};

const CASES: [number, string][] = [
  [1234567.8, '1234568'],
  [-1234567.8, '-1234568'],
  [12345678901.2, '12345678901'],
  [999999.7, '1000000'],
  [123456.78, '123457'],
  [1.5999999999999999, '1.6'],
  [20.1, '20.1'],
  [0.000123456789, '0.000123457'],
  [1013.25, '1013.25'],
  [0, '0'],
];

describe('legend numbers', () => {
  for (const [name, make] of [
    ['an engine that honours roundingPriority', current],
    ['an engine that ignores roundingPriority', ignoring],
  ] as const) {
    it(`when ${name} writes a value then it keeps 6 significant digits and every whole one`, () => {
      const show = legendNumber(make);
      assert.deepEqual(
        CASES.map(([value]) => show(value)),
        CASES.map(([, written]) => written),
      );
    });
  }
});
