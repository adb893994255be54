import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DateTime, IANAZone } from 'luxon';
import {
  formatOptional,
  parseDateTime,
  presentStoredTimestamps,
  resolveTimeZone,
  STR_TIMESTAMP_PATTERN,
  timeFormatter,
  toIsoWithMillis,
} from '../../src/core/time.ts';
import { RAILS_TIME_ZONES } from '../../src/core/time-zones.ts';

const JAN_1_2024 = Date.UTC(2024, 0, 1);

describe('time zones', () => {
  it('when every Rails zone name is listed then each stands for a zone luxon knows', () => {
    const names = Object.keys(RAILS_TIME_ZONES);
    assert.equal(names.length, 154);
    for (const name of names) {
      assert.ok(IANAZone.isValidZone(RAILS_TIME_ZONES[name]!), `${name} -> ${RAILS_TIME_ZONES[name]}`);
    }
  });

  it('when an IANA name is given then it resolves to itself', () => {
    assert.equal(resolveTimeZone('Asia/Kolkata'), 'Asia/Kolkata');
    assert.equal(resolveTimeZone('America/New_York'), 'America/New_York');
    assert.equal(resolveTimeZone('Etc/UTC'), 'Etc/UTC');
    assert.equal(resolveTimeZone('Asia/Kathmandu'), 'Asia/Kathmandu');
  });

  it('when a Rails name is given then it resolves to the IANA zone Rails maps it to', () => {
    assert.equal(resolveTimeZone('Mumbai'), 'Asia/Kolkata');
    assert.equal(resolveTimeZone('New Delhi'), 'Asia/Kolkata');
    assert.equal(resolveTimeZone('Eastern Time (US & Canada)'), 'America/New_York');
    assert.equal(resolveTimeZone('Pacific Time (US & Canada)'), 'America/Los_Angeles');
    assert.equal(resolveTimeZone('International Date Line West'), 'Etc/GMT+12');
    assert.equal(resolveTimeZone('UTC'), 'Etc/UTC');
    assert.equal(resolveTimeZone('Tokyo'), 'Asia/Tokyo');
    assert.equal(resolveTimeZone('Kyiv'), 'Europe/Kyiv');
    assert.equal(resolveTimeZone("Nuku'alofa"), 'Pacific/Tongatapu');
    assert.equal(resolveTimeZone('Samoa'), 'Pacific/Apia');
  });

  it('when a Rails name differs only in case then it still resolves', () => {
    assert.equal(resolveTimeZone('mumbai'), 'Asia/Kolkata');
    assert.equal(resolveTimeZone('EASTERN TIME (US & CANADA)'), 'America/New_York');
  });

  it('when a name is neither IANA nor Rails then it resolves to undefined', () => {
    assert.equal(resolveTimeZone('Nowhere/Land'), undefined);
    assert.equal(resolveTimeZone('Atlantis'), undefined);
    assert.equal(resolveTimeZone(''), undefined);
    // Asked twice: the remembered answer is the same.
    assert.equal(resolveTimeZone('Atlantis'), undefined);
  });

  it('when a name matches an Object member then it resolves to undefined', () => {
    for (const name of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) {
      assert.equal(resolveTimeZone(name), undefined, name);
    }
  });
});

describe('timeFormatter', () => {
  it('when the format is int then epoch seconds come out, rounded down', () => {
    const time = timeFormatter('int', 'Asia/Kolkata');
    assert.equal(time(JAN_1_2024), 1_704_067_200);
    assert.equal(time(JAN_1_2024 + 999), 1_704_067_200);
    assert.equal(time(-1), -1);
    assert.equal(time.format, 'int');
    assert.equal(time.zone, 'Asia/Kolkata');
  });

  it('when the format is str then local time in the zone comes out as yyyy/MM/dd HH:mm:ss', () => {
    assert.equal(STR_TIMESTAMP_PATTERN, 'yyyy/MM/dd HH:mm:ss');
    assert.equal(timeFormatter('str', 'Asia/Kolkata')(JAN_1_2024), '2024/01/01 05:30:00');
    assert.equal(timeFormatter('str', 'Asia/Kathmandu')(JAN_1_2024), '2024/01/01 05:45:00');
    assert.equal(timeFormatter('str', 'Etc/UTC')(JAN_1_2024), '2024/01/01 00:00:00');
    assert.equal(timeFormatter('str', 'Etc/GMT+12')(JAN_1_2024), '2023/12/31 12:00:00');
    assert.equal(timeFormatter('str', 'America/New_York')(JAN_1_2024), '2023/12/31 19:00:00');
  });

  it('when many instants are shown in one zone then each is what luxon shows, across clock changes and in any order', () => {
    const zones = [
      'America/New_York',
      'Europe/London',
      'Australia/Lord_Howe',
      'Asia/Kathmandu',
      'Pacific/Apia',
      'Etc/UTC',
    ];
    const HOUR = 3_600_000;
    for (const zone of zones) {
      const time = timeFormatter('str', zone);
      const luxon = (ms: number) => DateTime.fromMillis(ms, { zone }).toFormat('yyyy/MM/dd HH:mm:ss');
      // Every 7 minutes through two years (both clock changes of each), then back, then scattered.
      const instants: number[] = [];
      for (let ms = Date.UTC(2010, 11, 1); ms < Date.UTC(2012, 11, 1); ms += 7 * 60_000 + 1_013) instants.push(ms);
      instants.push(...[...instants].reverse().filter((_, i) => i % 5 === 0));
      for (let i = 0; i < 2_000; i++) instants.push(Math.floor(Math.sin(i) * 1e12) + 1.5e12 + (i % 3) * HOUR);
      instants.push(-62_135_596_800_000, 253_402_300_799_000, 0, -1);
      for (const ms of instants) assert.equal(time(ms), luxon(ms), `${zone} ${ms}`);
    }
  });

  it('when a value may be missing then formatOptional passes null and undefined through as null', () => {
    const time = timeFormatter('int', 'Etc/UTC');
    assert.equal(formatOptional(time, null), null);
    assert.equal(formatOptional(time, undefined), null);
    assert.equal(formatOptional(time, JAN_1_2024), 1_704_067_200);
    assert.equal(formatOptional(time, 0), 0);
  });

  it('when an instant is shown as ISO then it has milliseconds and Z', () => {
    assert.equal(toIsoWithMillis(JAN_1_2024 + 5), '2024-01-01T00:00:00.005Z');
  });
});

describe('parseDateTime', () => {
  it('when text is yyyy/mm/dd hh:mm:ss then it is read in the zone', () => {
    assert.equal(parseDateTime('2024/01/01 05:30:00', 'Asia/Kolkata'), JAN_1_2024);
    assert.equal(parseDateTime('2024/01/01 00:00:00', 'Etc/UTC'), JAN_1_2024);
  });

  it('when text is yyyy-mm-dd hh:mm:ss then it is read in the zone', () => {
    assert.equal(parseDateTime('2024-01-01 05:30:00', 'Asia/Kolkata'), JAN_1_2024);
    assert.equal(parseDateTime('2023-12-31 19:00:00', 'America/New_York'), JAN_1_2024);
    assert.equal(parseDateTime('  2024-01-01 05:45:00 ', 'Asia/Kathmandu'), JAN_1_2024);
  });

  it('when text is a date alone then it is local midnight', () => {
    assert.equal(parseDateTime('2024/01/01', 'Asia/Kolkata'), JAN_1_2024 - 5.5 * 3_600_000);
    assert.equal(parseDateTime('2024-01-01', 'Etc/UTC'), JAN_1_2024);
  });

  it('when text is ISO 8601 with an offset then the offset wins over the zone', () => {
    assert.equal(parseDateTime('2024-01-01T09:00:00+09:00', 'America/New_York'), JAN_1_2024);
    assert.equal(parseDateTime('2024-01-01T00:00:00Z', 'Asia/Kolkata'), JAN_1_2024);
  });

  it('when epoch seconds are given as a number or numeric text then they become milliseconds', () => {
    assert.equal(parseDateTime(1_704_067_200, 'Asia/Kolkata'), JAN_1_2024);
    assert.equal(parseDateTime('1704067200', 'Asia/Kolkata'), JAN_1_2024);
    assert.equal(parseDateTime('1.7040672e9', 'Etc/UTC'), JAN_1_2024);
    assert.equal(parseDateTime('1704067200.5', 'Etc/UTC'), JAN_1_2024 + 500);
    assert.equal(parseDateTime(0, 'Etc/UTC'), 0);
    assert.equal(parseDateTime('-60', 'Etc/UTC'), -60_000);
  });

  it('when epoch seconds lie beyond the dates a clock can name then the answer is undefined', () => {
    for (const value of [1e20, '99999999999999999999', 8.64e12 + 1, -8.64e12 - 1, '9000000000000']) {
      assert.equal(parseDateTime(value, 'Etc/UTC'), undefined, String(value));
    }
    assert.equal(parseDateTime(8.64e12, 'Etc/UTC'), 8.64e15);
    assert.equal(parseDateTime('-8640000000000', 'Etc/UTC'), -8.64e15);
  });

  it('when the value is garbage then the answer is undefined', () => {
    for (const value of [
      'garbage',
      '',
      '2024-02-30 00:00:00',
      '2024/13/01 00:00:00',
      'Infinity',
      ' 1704067200 ',
      '0x10',
      '1e999',
    ]) {
      assert.equal(parseDateTime(value, 'Etc/UTC'), undefined, JSON.stringify(value));
    }
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, null, undefined, true, {}, [], new Date(0)]) {
      assert.equal(parseDateTime(value, 'Etc/UTC'), undefined, String(value));
    }
  });

  it('when local times fall around a DST change in America/New_York then each maps to its offset', () => {
    const zone = 'America/New_York';
    // Spring forward on 2024-03-10: 02:00 EST becomes 03:00 EDT.
    assert.equal(parseDateTime('2024-03-10 01:59:59', zone), Date.UTC(2024, 2, 10, 6, 59, 59));
    assert.equal(parseDateTime('2024-03-10 03:00:00', zone), Date.UTC(2024, 2, 10, 7));
    // A time the clock skips is moved forward by the hour it skipped.
    assert.equal(parseDateTime('2024-03-10 02:30:00', zone), Date.UTC(2024, 2, 10, 7, 30));
    // Fall back on 2024-11-03: 02:00 EDT becomes 01:00 EST.
    assert.equal(parseDateTime('2024-11-03 00:59:59', zone), Date.UTC(2024, 10, 3, 4, 59, 59));
    assert.equal(parseDateTime('2024-11-03 02:00:00', zone), Date.UTC(2024, 10, 3, 7));
    const repeated = parseDateTime('2024-11-03 01:30:00', zone);
    assert.ok(
      repeated === Date.UTC(2024, 10, 3, 5, 30) || repeated === Date.UTC(2024, 10, 3, 6, 30),
      `01:30 is one of its two instants: ${repeated}`,
    );
  });

  it('when an instant is formatted and read back in the same zone then it is unchanged', () => {
    for (const zone of ['Asia/Kolkata', 'America/New_York', 'Australia/Lord_Howe', 'Etc/GMT+12']) {
      const time = timeFormatter('str', zone);
      for (const ms of [JAN_1_2024, Date.UTC(2024, 6, 15, 12, 34, 56), Date.UTC(2024, 2, 10, 7)]) {
        assert.equal(parseDateTime(time(ms), zone), ms, `${zone} ${time(ms)}`);
      }
    }
  });

  it('when a stored snapshot holds a member named __proto__ then it is presented as a member, its times too', () => {
    const stored = JSON.parse('{"timestamp":1,"thing":{"__proto__":{"timestamp":2}}}');
    const time = timeFormatter('str', 'UTC');
    const shown = presentStoredTimestamps(stored, time);
    const [one, two] = [JSON.stringify(time(1000)), JSON.stringify(time(2000))];
    assert.equal(JSON.stringify(shown), `{"timestamp":${one},"thing":{"__proto__":{"timestamp":${two}}}}`);
  });
});
