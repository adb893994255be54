import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { timeMarks } from '../../console/src/components/time-marks.ts';

/** Epoch seconds of a local time: the marks are written in the zone the test runs in. */
const at = (year: number, month: number, day: number, hour = 0, minute = 0, second = 0) =>
  new Date(year, month - 1, day, hour, minute, second).getTime() / 1000;

const now = new Date(2026, 11, 3, 18, 0);

describe("a chart's time axis", () => {
  it('when marks are minutes apart then each is a time, and the first and the first of a new day also say the day', () => {
    const splits = [at(2026, 12, 2, 23, 50), at(2026, 12, 2, 23, 55), at(2026, 12, 3, 0, 0), at(2026, 12, 3, 0, 5)];
    assert.deepEqual(timeMarks(splits, 300, now, 'en-US'), [
      '11:50 PM\nDec 2',
      '11:55 PM',
      '12:00 AM\nDec 3',
      '12:05 AM',
    ]);
  });

  it('when marks are whole hours apart then the hour alone is written', () => {
    assert.deepEqual(timeMarks([at(2026, 12, 3, 15), at(2026, 12, 3, 17)], 7200, now, 'en-US'), [
      '3 PM\nDec 3',
      '5 PM',
    ]);
  });

  it('when marks are seconds apart then they say the seconds', () => {
    assert.deepEqual(timeMarks([at(2026, 12, 3, 17, 20, 30), at(2026, 12, 3, 17, 20, 45)], 15, now, 'en-US'), [
      '5:20:30 PM\nDec 3',
      '5:20:45 PM',
    ]);
  });

  it('when marks are days or months apart then they are dates, with a year only where it is not this one', () => {
    assert.deepEqual(timeMarks([at(2026, 11, 29), at(2026, 11, 30)], 86_400, now, 'en-US'), ['Nov 29', 'Nov 30']);
    assert.deepEqual(timeMarks([at(2025, 12, 31), at(2026, 1, 1)], 86_400, now, 'en-US'), ['Dec 31, 2025', 'Jan 1']);
    assert.deepEqual(timeMarks([at(2025, 11, 1), at(2025, 12, 1), at(2026, 1, 1)], 31 * 86_400, now, 'en-US'), [
      'Nov\n2025',
      'Dec',
      'Jan\n2026',
    ]);
  });
});
