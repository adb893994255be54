import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DateTime } from 'luxon';
import { ApiError } from '../../src/core/errors.ts';
import { timeFormatter } from '../../src/core/time.ts';
import {
  DEFAULT_MAX_BUCKETS,
  type TimeBuckets,
  type TimeGrouping,
  TooManyBucketsError,
  timeBuckets,
} from '../../src/queries/time-buckets.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Epoch ms of a local date-time (ISO without offset) in a zone. */
const local = (iso: string, zone: string): number => DateTime.fromISO(iso, { zone }).toMillis();

/** Bucket starts as local ISO text, for readable failures. */
const startsIn = (buckets: TimeBuckets, zone: string): string[] =>
  buckets.starts.map((ms) => DateTime.fromMillis(ms, { zone }).toISO()!);

const lengths = (buckets: TimeBuckets): number[] => buckets.starts.map((start, i) => buckets.ends[i]! - start);

describe('timeBuckets alignment', () => {
  it('when 15-minute buckets cover a day in Asia/Kolkata then there are 96 from local midnight', () => {
    const zone = 'Asia/Kolkata';
    const from = local('2024-01-01T00:00:00', zone);
    const buckets = timeBuckets({ from, to: from + DAY - 1, grouping: 'minute', size: 15, zone });
    assert.equal(buckets.length, 96);
    assert.equal(buckets.starts[0], Date.UTC(2023, 11, 31, 18, 30));
    assert.ok(lengths(buckets).every((ms) => ms === 15 * MINUTE));
    assert.equal(buckets.ends[95], from + DAY);
    const keys = buckets.keys(timeFormatter('str', zone));
    assert.deepEqual(keys.slice(0, 5), [
      '2024/01/01 00:00:00',
      '2024/01/01 00:15:00',
      '2024/01/01 00:30:00',
      '2024/01/01 00:45:00',
      '2024/01/01 01:00:00',
    ]);
    assert.equal(keys[95], '2024/01/01 23:45:00');
  });

  it('when hour buckets are asked in Asia/Kathmandu then they start at local :00 (UTC :15)', () => {
    const zone = 'Asia/Kathmandu';
    const buckets = timeBuckets({
      from: Date.UTC(2024, 0, 1, 0, 0),
      to: Date.UTC(2024, 0, 1, 3, 0),
      grouping: 'hour',
      size: 1,
      zone,
    });
    assert.deepEqual(
      buckets.starts.map((ms) => new Date(ms).toISOString()),
      ['2023-12-31T23:15:00.000Z', '2024-01-01T00:15:00.000Z', '2024-01-01T01:15:00.000Z', '2024-01-01T02:15:00.000Z'],
    );
    assert.deepEqual(buckets.keys(timeFormatter('str', zone)), [
      '2024/01/01 05:00:00',
      '2024/01/01 06:00:00',
      '2024/01/01 07:00:00',
      '2024/01/01 08:00:00',
    ]);
  });

  it('when hour buckets cover the spring-forward day in America/New_York then there are 23', () => {
    const zone = 'America/New_York';
    const from = local('2024-03-10T00:00:00', zone);
    const to = local('2024-03-11T00:00:00', zone) - 1;
    const buckets = timeBuckets({ from, to, grouping: 'hour', size: 1, zone });
    assert.equal(buckets.length, 23);
    assert.deepEqual(startsIn(buckets, zone).slice(0, 4), [
      '2024-03-10T00:00:00.000-05:00',
      '2024-03-10T01:00:00.000-05:00',
      '2024-03-10T03:00:00.000-04:00',
      '2024-03-10T04:00:00.000-04:00',
    ]);
    assert.ok(lengths(buckets).every((ms) => ms === HOUR));
    assert.equal(buckets.ends[22], to + 1);
  });

  it('when hour buckets cover the fall-back day in America/New_York then there are 25, the repeated hour twice', () => {
    const zone = 'America/New_York';
    const from = local('2024-11-03T00:00:00', zone);
    const to = local('2024-11-04T00:00:00', zone) - 1;
    const buckets = timeBuckets({ from, to, grouping: 'hour', size: 1, zone });
    assert.equal(buckets.length, 25);
    assert.deepEqual(startsIn(buckets, zone).slice(0, 4), [
      '2024-11-03T00:00:00.000-04:00',
      '2024-11-03T01:00:00.000-04:00',
      '2024-11-03T01:00:00.000-05:00',
      '2024-11-03T02:00:00.000-05:00',
    ]);
    assert.ok(lengths(buckets).every((ms) => ms === HOUR));
    // Both passes of 01:00 read the same local time; epoch keys tell them apart.
    const str = buckets.keys(timeFormatter('str', zone));
    assert.equal(str[1], '2024/11/03 01:00:00');
    assert.equal(str[2], '2024/11/03 01:00:00');
    const int = buckets.keys(timeFormatter('int', zone));
    assert.equal(new Set(int).size, 25);
  });

  it('when 2-hour buckets cover DST changes then they follow the local clock', () => {
    const zone = 'America/New_York';
    const spring = timeBuckets({
      from: local('2024-03-10T00:00:00', zone),
      to: local('2024-03-10T05:59:59', zone),
      grouping: 'hour',
      size: 2,
      zone,
    });
    // 02:00 never shows on the clock; the bucket begun by the jump keeps its real start.
    assert.deepEqual(startsIn(spring, zone), [
      '2024-03-10T00:00:00.000-05:00',
      '2024-03-10T03:00:00.000-04:00',
      '2024-03-10T04:00:00.000-04:00',
    ]);
    const fall = timeBuckets({
      from: local('2024-11-03T00:00:00', zone),
      to: local('2024-11-03T03:59:59', zone),
      grouping: 'hour',
      size: 2,
      zone,
    });
    // 00:00-02:00 lasts three hours: the clock passes 01:00 twice but no start.
    assert.deepEqual(startsIn(fall, zone), ['2024-11-03T00:00:00.000-04:00', '2024-11-03T02:00:00.000-05:00']);
    assert.deepEqual(lengths(fall), [3 * HOUR, 2 * HOUR]);
  });

  it('when a zone changes by half an hour (Australia/Lord_Howe) then hour buckets still start at :00', () => {
    const zone = 'Australia/Lord_Howe';
    // On 2024-04-07 the clock goes back from 02:00 to 01:30.
    const buckets = timeBuckets({
      from: local('2024-04-07T00:00:00', zone),
      to: local('2024-04-08T00:00:00', zone) - 1,
      grouping: 'hour',
      size: 1,
      zone,
    });
    assert.equal(buckets.length, 24);
    assert.deepEqual(lengths(buckets).slice(0, 3), [HOUR, 1.5 * HOUR, HOUR]);
    assert.ok(buckets.keys(timeFormatter('str', zone)).every((key) => key.endsWith(':00:00')));
  });

  it('when day buckets cross DST changes then a day lasts 23 or 25 hours', () => {
    const zone = 'America/New_York';
    const spring = timeBuckets({
      from: local('2024-03-09T12:00:00', zone),
      to: local('2024-03-11T12:00:00', zone),
      grouping: 'day',
      size: 1,
      zone,
    });
    assert.deepEqual(startsIn(spring, zone), [
      '2024-03-09T00:00:00.000-05:00',
      '2024-03-10T00:00:00.000-05:00',
      '2024-03-11T00:00:00.000-04:00',
    ]);
    assert.deepEqual(lengths(spring), [24 * HOUR, 23 * HOUR, 24 * HOUR]);
    const fall = timeBuckets({
      from: local('2024-11-02T00:00:00', zone),
      to: local('2024-11-04T00:00:00', zone),
      grouping: 'day',
      size: 1,
      zone,
    });
    assert.deepEqual(lengths(fall), [24 * HOUR, 25 * HOUR, 24 * HOUR]);
  });

  it('when a DST change skips local midnight (America/Santiago) then that day starts at 01:00', () => {
    const zone = 'America/Santiago';
    const buckets = timeBuckets({
      from: local('2024-09-07T12:00:00', zone),
      to: local('2024-09-08T12:00:00', zone),
      grouping: 'day',
      size: 1,
      zone,
    });
    assert.deepEqual(startsIn(buckets, zone), ['2024-09-07T00:00:00.000-04:00', '2024-09-08T01:00:00.000-03:00']);
    assert.deepEqual(lengths(buckets), [24 * HOUR, 23 * HOUR]);
  });

  it('when the clock falls back onto midnight (America/Havana) then the day is one 25-hour bucket', () => {
    const zone = 'America/Havana';
    // On 2023-11-05 the clock goes back from 01:00 to 00:00, so it reads midnight at 04:00Z and 05:00Z.
    const from = Date.UTC(2023, 10, 5, 4, 30);
    const days = timeBuckets({ from, to: from + 24 * HOUR, grouping: 'day', size: 1, zone });
    assert.equal(days.starts[0], Date.UTC(2023, 10, 5, 4));
    assert.deepEqual(lengths(days), [25 * HOUR]);
    // Starting after the second midnight still finds the day's first.
    const later = timeBuckets({
      from: Date.UTC(2023, 10, 5, 5, 30),
      to: Date.UTC(2023, 10, 5, 6),
      grouping: 'day',
      size: 1,
      zone,
    });
    assert.deepEqual(later.starts, [Date.UTC(2023, 10, 5, 4)]);
    // Hours do repeat: 00:00 begins two hour buckets.
    const hours = timeBuckets({
      from: Date.UTC(2023, 10, 5, 4),
      to: Date.UTC(2023, 10, 5, 6),
      grouping: 'hour',
      size: 1,
      zone,
    });
    assert.deepEqual(hours.keys(timeFormatter('str', zone)), [
      '2023/11/05 00:00:00',
      '2023/11/05 00:00:00',
      '2023/11/05 01:00:00',
    ]);
  });

  it('when month buckets cross the year boundary then they start on the 1st at local midnight', () => {
    const zone = 'Asia/Kolkata';
    const buckets = timeBuckets({
      from: local('2023-11-15T10:00:00', zone),
      to: local('2024-02-10T10:00:00', zone),
      grouping: 'month',
      size: 1,
      zone,
    });
    assert.deepEqual(buckets.keys(timeFormatter('str', zone)), [
      '2023/11/01 00:00:00',
      '2023/12/01 00:00:00',
      '2024/01/01 00:00:00',
      '2024/02/01 00:00:00',
    ]);
    assert.equal(buckets.ends[3], local('2024-03-01T00:00:00', zone));
    assert.deepEqual(lengths(buckets), [30 * DAY, 31 * DAY, 31 * DAY, 29 * DAY]);
  });

  it('when 3-month buckets are asked then they start in January, April, July and October', () => {
    const zone = 'America/New_York';
    const buckets = timeBuckets({
      from: local('2023-12-15T00:00:00', zone),
      to: local('2024-12-31T23:59:59', zone),
      grouping: 'month',
      size: 3,
      zone,
    });
    assert.deepEqual(startsIn(buckets, zone), [
      '2023-10-01T00:00:00.000-04:00',
      '2024-01-01T00:00:00.000-05:00',
      '2024-04-01T00:00:00.000-04:00',
      '2024-07-01T00:00:00.000-04:00',
      '2024-10-01T00:00:00.000-04:00',
    ]);
    assert.equal(buckets.ends[4], local('2025-01-01T00:00:00', zone));
  });

  it('when sizes do not divide the next unit then the last bucket in it is short', () => {
    const zone = 'Etc/UTC';
    const days = timeBuckets({
      from: Date.UTC(2024, 1, 1),
      to: Date.UTC(2024, 2, 1) - 1,
      grouping: 'day',
      size: 7,
      zone,
    });
    assert.deepEqual(
      days.starts.map((ms) => new Date(ms).getUTCDate()),
      [1, 8, 15, 22, 29],
    );
    assert.deepEqual(lengths(days), [7 * DAY, 7 * DAY, 7 * DAY, 7 * DAY, DAY]);
    const minutes = timeBuckets({
      from: Date.UTC(2024, 0, 1, 0, 50),
      to: Date.UTC(2024, 0, 1, 1, 5),
      grouping: 'minute',
      size: 7,
      zone,
    });
    assert.deepEqual(
      minutes.starts.map((ms) => new Date(ms).toISOString().slice(11, 16)),
      ['00:49', '00:56', '01:00'],
    );
    assert.deepEqual(lengths(minutes), [7 * MINUTE, 4 * MINUTE, 7 * MINUTE]);
    const months = timeBuckets({
      from: Date.UTC(2024, 0, 1),
      to: Date.UTC(2024, 11, 31),
      grouping: 'month',
      size: 5,
      zone,
    });
    assert.deepEqual(
      months.starts.map((ms) => new Date(ms).getUTCMonth() + 1),
      [1, 6, 11],
    );
  });

  it('when a size reaches past the next unit then each bucket is that whole unit', () => {
    const zone = 'Etc/UTC';
    const minutes = timeBuckets({
      from: Date.UTC(2024, 0, 1),
      to: Date.UTC(2024, 0, 1, 2, 59),
      grouping: 'minute',
      size: 90,
      zone,
    });
    assert.deepEqual(lengths(minutes), [HOUR, HOUR, HOUR]);
    const days = timeBuckets({
      from: Date.UTC(2024, 0, 1),
      to: Date.UTC(2024, 2, 31),
      grouping: 'day',
      size: 40,
      zone,
    });
    assert.deepEqual(lengths(days), [31 * DAY, 29 * DAY, 31 * DAY]);
    const months = timeBuckets({
      from: Date.UTC(2023, 5, 1),
      to: Date.UTC(2024, 5, 1),
      grouping: 'month',
      size: 18,
      zone,
    });
    assert.deepEqual(
      months.starts.map((ms) => new Date(ms).toISOString().slice(0, 10)),
      ['2023-01-01', '2024-01-01'],
    );
  });

  it('when from and to fall inside buckets then the first and last buckets are the ones holding them', () => {
    const zone = 'Asia/Kolkata';
    const from = local('2024-05-05T10:20:30', zone);
    const to = local('2024-05-05T12:10:00', zone);
    const buckets = timeBuckets({ from, to, grouping: 'hour', size: 1, zone });
    assert.deepEqual(buckets.keys(timeFormatter('str', zone)), [
      '2024/05/05 10:00:00',
      '2024/05/05 11:00:00',
      '2024/05/05 12:00:00',
    ]);
    assert.equal(buckets.ends[2], local('2024-05-05T13:00:00', zone));
    const single = timeBuckets({ from, to: from, grouping: 'day', size: 1, zone });
    assert.equal(single.length, 1);
    assert.equal(single.starts[0], local('2024-05-05T00:00:00', zone));
    assert.equal(single.ends[0], local('2024-05-06T00:00:00', zone));
  });
});

describe('timeBuckets indexOf', () => {
  it('when an instant is on a boundary then it belongs to the bucket that starts there', () => {
    const zone = 'America/New_York';
    const buckets = timeBuckets({
      from: local('2024-11-03T00:00:00', zone),
      to: local('2024-11-03T05:00:00', zone),
      grouping: 'hour',
      size: 1,
      zone,
    });
    for (let i = 0; i < buckets.length; i++) {
      assert.equal(buckets.indexOf(buckets.starts[i]!), i);
      assert.equal(buckets.indexOf(buckets.ends[i]! - 1), i);
      assert.equal(buckets.indexOf(buckets.starts[i]! + 1), i);
    }
    // Out of order, so the remembered position does not help.
    assert.equal(buckets.indexOf(buckets.starts[4]!), 4);
    assert.equal(buckets.indexOf(buckets.starts[0]!), 0);
    assert.equal(buckets.indexOf(buckets.starts[2]! + 30 * MINUTE), 2);
  });

  it('when an instant is outside every bucket then indexOf is -1', () => {
    const buckets = timeBuckets({ from: 0, to: 10 * DAY, grouping: 'day', size: 1, zone: 'Etc/UTC' });
    assert.equal(buckets.indexOf(-1), -1);
    assert.equal(buckets.indexOf(buckets.ends[buckets.length - 1]!), -1);
    assert.equal(buckets.indexOf(Number.NaN), -1);
    assert.equal(buckets.indexOf(Number.POSITIVE_INFINITY), -1);
    assert.equal(buckets.indexOf(Number.NEGATIVE_INFINITY), -1);
  });

  it('when 50,000 events are assigned then each lands in its bucket, quickly', () => {
    const zone = 'America/New_York';
    const from = local('2024-01-01T00:00:00', zone);
    const to = local('2025-01-01T00:00:00', zone) - 1;
    const buckets = timeBuckets({ from, to, grouping: 'hour', size: 1, zone });
    assert.equal(buckets.length, 366 * 24);
    const events = Array.from({ length: 50_000 }, (_, i) => from + Math.floor(((to - from) * i) / 50_000));
    const started = performance.now();
    const found = events.map((ms) => buckets.indexOf(ms));
    const elapsed = performance.now() - started;
    // Loose bound: it catches a linear search, not a slow machine.
    assert.ok(elapsed < 500, `${elapsed} ms`);
    for (let i = 0; i < events.length; i += 997) {
      const at = found[i]!;
      assert.ok(buckets.starts[at]! <= events[i]! && events[i]! < buckets.ends[at]!);
    }
  });
});

describe('timeBuckets limits and arguments', () => {
  it('when the range needs exactly the maximum then it is allowed, and one more is a 400', () => {
    const from = Date.UTC(2024, 0, 1);
    const exact = timeBuckets({ from, to: from + 9_999 * MINUTE, grouping: 'minute', size: 1, zone: 'Etc/UTC' });
    assert.equal(exact.length, DEFAULT_MAX_BUCKETS);
    assert.throws(
      () => timeBuckets({ from, to: from + 10_000 * MINUTE, grouping: 'minute', size: 1, zone: 'Etc/UTC' }),
      (error: unknown) => {
        assert.ok(error instanceof TooManyBucketsError);
        assert.ok(error instanceof ApiError);
        assert.equal(error.status, 400);
        assert.equal(error.count, 10_001);
        assert.equal(error.max, 10_000);
        assert.equal(error.errors[0]?.code, 'invalid');
        return true;
      },
    );
  });

  it('when maxBuckets is given then it is the limit', () => {
    const from = Date.UTC(2024, 0, 1);
    assert.equal(
      timeBuckets({ from, to: from + 4 * DAY, grouping: 'day', size: 1, zone: 'Etc/UTC', maxBuckets: 5 }).length,
      5,
    );
    assert.throws(
      () => timeBuckets({ from, to: from + 5 * DAY, grouping: 'day', size: 1, zone: 'Etc/UTC', maxBuckets: 5 }),
      TooManyBucketsError,
    );
  });

  it('when the range is far too long then the error comes at once with the calendar count', () => {
    const started = performance.now();
    assert.throws(
      () =>
        timeBuckets({
          from: Date.UTC(2000, 0, 1),
          to: Date.UTC(2100, 0, 1) - 1,
          grouping: 'minute',
          size: 1,
          zone: 'America/New_York',
        }),
      (error: unknown) => error instanceof TooManyBucketsError && error.count === 36_525 * 24 * 60,
    );
    assert.throws(
      () =>
        timeBuckets({
          from: Date.UTC(1900, 0, 1),
          to: Date.UTC(2000, 0, 1) - 1,
          grouping: 'day',
          size: 1,
          zone: 'Etc/UTC',
        }),
      (error: unknown) => error instanceof TooManyBucketsError && error.count === 36_524,
    );
    assert.ok(performance.now() - started < 200);
  });

  it('when arguments are impossible then a RangeError says which', () => {
    const base = { from: 0, to: DAY, grouping: 'hour' as TimeGrouping, size: 1, zone: 'Etc/UTC' };
    assert.throws(() => timeBuckets({ ...base, from: DAY, to: 0 }), RangeError);
    assert.throws(() => timeBuckets({ ...base, zone: 'Nowhere/Land' }), RangeError);
    assert.throws(() => timeBuckets({ ...base, size: 0 }), RangeError);
    assert.throws(() => timeBuckets({ ...base, size: 1.5 }), RangeError);
    assert.throws(() => timeBuckets({ ...base, to: Number.NaN }), RangeError);
    assert.throws(() => timeBuckets({ ...base, grouping: 'week' as TimeGrouping }), RangeError);
    assert.throws(() => timeBuckets({ ...base, maxBuckets: 0 }), /maxBuckets must be a positive integer/);
    assert.throws(() => timeBuckets({ ...base, maxBuckets: 2.5 }), /maxBuckets must be a positive integer/);
  });
});

const ZONES = [
  'Etc/UTC',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'America/New_York',
  'Europe/London',
  'Australia/Lord_Howe',
  'America/Santiago',
  'America/St_Johns',
  'Pacific/Chatham',
  'America/Havana',
  'Africa/Casablanca',
];

interface ClockReading {
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

/** Whether a local clock reading is a start time of the grouping (the rule, restated plainly). */
function isStartTime(t: ClockReading, grouping: TimeGrouping, size: number): boolean {
  if (t.second !== 0 || t.millisecond !== 0) return false;
  switch (grouping) {
    case 'minute':
      return size < 60 ? t.minute % size === 0 : t.minute === 0;
    case 'hour':
      return t.minute === 0 && (size < 24 ? t.hour % size === 0 : t.hour === 0);
    case 'day':
      return t.hour === 0 && t.minute === 0 && (size < 31 ? (t.day - 1) % size === 0 : t.day === 1);
    case 'month':
      return t.day === 1 && t.hour === 0 && t.minute === 0 && (size < 12 ? (t.month - 1) % size === 0 : t.month === 1);
  }
}

const readsStart = (ms: number, zone: string, grouping: TimeGrouping, size: number): boolean =>
  isStartTime(DateTime.fromMillis(ms, { zone }), grouping, size);

const SPANS: Record<TimeGrouping, number> = {
  minute: 3 * DAY,
  hour: 90 * DAY,
  day: 3 * 365 * DAY,
  month: 30 * 365 * DAY,
};

describe('timeBuckets properties', () => {
  it('when from <= to and any grouping then buckets are ascending, contiguous, cover the range and indexOf agrees', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<TimeGrouping>('minute', 'hour', 'day', 'month'),
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom(...ZONES),
        fc.integer({ min: Date.UTC(1975, 0, 1), max: Date.UTC(2045, 0, 1) }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 20 }),
        (grouping, size, zone, from, spanFraction, probes) => {
          const to = from + Math.floor(SPANS[grouping] * spanFraction);
          const buckets = timeBuckets({ from, to, grouping, size, zone, maxBuckets: 1_000_000 });
          const { starts, ends } = buckets;
          assert.equal(starts.length, buckets.length);
          assert.ok(buckets.length >= 1);
          assert.ok(starts[0]! <= from && from < ends[0]!, 'the first bucket holds from');
          assert.ok(starts[buckets.length - 1]! <= to && to < ends[buckets.length - 1]!, 'the last bucket holds to');
          for (let i = 0; i < buckets.length; i++) {
            assert.ok(starts[i]! < ends[i]!, 'strictly ascending');
            if (i + 1 < buckets.length) assert.equal(ends[i], starts[i + 1], 'contiguous');
          }
          // Every start reads a start time on the local clock, unless a clock change moved it.
          for (const start of [starts[0]!, starts[buckets.length - 1]!, starts[buckets.length >> 1]!]) {
            const changed =
              DateTime.fromMillis(start - 1, { zone }).offset !== DateTime.fromMillis(start, { zone }).offset;
            assert.ok(
              changed || readsStart(start, zone, grouping, size),
              DateTime.fromMillis(start, { zone }).toISO()!,
            );
          }
          const end = ends[buckets.length - 1]!;
          for (const p of probes) {
            const t = Math.min(end - 1, starts[0]! + Math.floor((end - starts[0]!) * p));
            const at = buckets.indexOf(t);
            assert.ok(at >= 0 && starts[at]! <= t && t < ends[at]!, `indexOf(${t}) = ${at}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('when compared with a minute-by-minute reading of the local clock around DST changes then the starts agree', () => {
    const changes: [string, string][] = [
      ['America/New_York', '2024-03-10T02:00'],
      ['America/New_York', '2024-11-03T01:00'],
      ['Australia/Lord_Howe', '2024-04-07T02:00'],
      ['Australia/Lord_Howe', '2024-10-06T02:00'],
      ['America/Havana', '2023-11-05T00:30'],
      ['America/Santiago', '2024-09-08T00:00'],
      ['Pacific/Chatham', '2024-04-07T03:00'],
      ['Europe/London', '2024-10-27T01:30'],
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...changes),
        fc.constantFrom<TimeGrouping>('minute', 'hour'),
        fc.constantFrom(1, 2, 5, 7, 15, 20, 30),
        fc.integer({ min: -4 * 60, max: 4 * 60 }),
        fc.integer({ min: 0, max: 3 * 60 }),
        ([zone, around], grouping, size, startMinutes, spanMinutes) => {
          const from = local(around, zone) + startMinutes * MINUTE;
          const to = from + spanMinutes * MINUTE;
          const buckets = timeBuckets({ from, to, grouping, size, zone });
          const margin = (grouping === 'minute' ? 1 : Math.min(size, 24)) * HOUR + 2 * HOUR;
          const expected = clockStarts(
            Math.floor((from - margin) / MINUTE) * MINUTE,
            to + margin,
            zone,
            grouping,
            size,
          );
          const first = expected.findLastIndex((ms) => ms <= from);
          const last = expected.findIndex((ms) => ms > to);
          assert.deepEqual([...buckets.starts, buckets.ends[buckets.length - 1]], expected.slice(first, last + 1));
        },
      ),
      { numRuns: 40 },
    );
  });
});

/**
 * Minute and hour bucket starts found the slow way, with luxon alone: every whole minute where the
 * local clock reads a start time, or has just jumped forward over one.
 */
function clockStarts(from: number, to: number, zone: string, grouping: TimeGrouping, size: number): number[] {
  const out: number[] = [];
  let before = DateTime.fromMillis(from - MINUTE, { zone }).offset;
  for (let ms = from; ms <= to; ms += MINUTE) {
    const offset = DateTime.fromMillis(ms, { zone }).offset;
    let starts = readsStart(ms, zone, grouping, size);
    // The readings a forward jump skipped: what the clock would have shown from here on at the old offset.
    for (let k = 0; !starts && k < offset - before; k++) {
      starts = isStartTime(DateTime.fromMillis(ms + (before + k) * MINUTE, { zone: 'utc' }), grouping, size);
    }
    if (starts) out.push(ms);
    before = offset;
  }
  return out;
}
