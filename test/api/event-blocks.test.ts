/**
 * The compact event store (docs/storage.md): events compacted into blocks, some left as rows, late rows
 * within a block's time, are read exactly as if they were all rows, by every read of events, on both
 * stores. The answers are checked against the events as they were written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeBlock, encodeBlock } from '../../src/events/block-codec.ts';
import { EventCompactor } from '../../src/events/compactor.ts';
import {
  countEvents,
  deleteEventsBefore,
  deleteEventsBetween,
  type EventRange,
  eventChunks,
  eventDataAt,
  newestEvent,
  pageOfEvents,
} from '../../src/events/repository.ts';
import { provisionOrganisation } from '../../src/organisations/service.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { STORES } from '../support/stores.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2025, 0, 1);

interface Written {
  eventId: number;
  timestamp: number;
  createdAt: number;
  data: string;
}

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** Event data of every shape a query reads: dotted and nested metrics, strings, arrays, booleans, null, odd numbers. */
function dataOf(i: number, next: () => number): Record<string, unknown> {
  switch (i % 6) {
    case 0:
      return { temperature: Math.round(next() * 10_000) / 100, pressure: 1 + (i % 13) / 20, rpm: 900 + (i % 400) };
    case 1:
      return { machine: { status: `s${i % 3}`, speed: i * 0.1 }, 'dotted.name': i };
    case 2:
      return { temperature: next() * 1e-9, list: [1, 'two', null, { three: 3 }], on: i % 2 === 0, none: null };
    case 3:
      return { text: `free text ${i} "quoted" é \u0001`, big: 2 ** 60 + i, tiny: -5e-324, pi: Math.PI * i };
    case 4:
      return {};
    default:
      return { temperature: -i, '1': 'numeric key', __proto__x: { deep: { deeper: [i, i + 0.5] } } };
  }
}

async function thingOf(store: Store): Promise<{ thingId: number; organisationKey: string; thingKey: string }> {
  const { organisation } = await provisionOrganisation(store.db, {
    name: `blocks-${Math.random()}`,
    isOem: true,
    parentKey: null,
  });
  const templateKey = `template-${Math.random().toString(36).slice(2)}`;
  await store.db
    .insertInto('thing_templates')
    .values({
      thing_template_key: templateKey,
      organisation_key: organisation.organisation_key,
      name: templateKey,
      metrics: '[]',
      heartbeat_interval: 60,
      idle_timeout: 300,
      created_at: T0,
      updated_at: T0,
    } as never)
    .execute();
  const thingKey = `blocks-${Math.random().toString(36).slice(2)}`;
  const row = await store.db
    .insertInto('things')
    .values({
      thing_key: thingKey,
      organisation_key: organisation.organisation_key,
      thing_template_key: templateKey,
      name: thingKey,
      created_at: T0,
      updated_at: T0,
    } as never)
    .returning('thing_id')
    .executeTakeFirstOrThrow();
  return { thingId: Number(row.thing_id), organisationKey: organisation.organisation_key, thingKey };
}

/** Stores events as the writer does (rows, the thing's count and lag bounds); answers them with their ids. */
async function write(store: Store, thingId: number, events: { timestamp: number; createdAt: number; data: object }[]) {
  const written: Written[] = [];
  for (const e of events) {
    const row = await store.db
      .insertInto('events')
      .values({
        thing_id: thingId,
        timestamp: e.timestamp,
        created_at: e.createdAt,
        data: JSON.stringify(e.data),
        waypoint: null,
      })
      .returning('event_id')
      .executeTakeFirstOrThrow();
    written.push({
      eventId: Number(row.event_id),
      timestamp: e.timestamp,
      createdAt: e.createdAt,
      data: JSON.stringify(e.data),
    });
  }
  const lags = events.map((e) => e.createdAt - e.timestamp);
  const thing = await store.db
    .selectFrom('things')
    .select(['event_count', 'arrival_lag_min', 'arrival_lag_max'])
    .where('thing_id', '=', thingId)
    .executeTakeFirstOrThrow();
  await store.db
    .updateTable('things')
    .set({
      event_count: Number(thing.event_count) + events.length,
      arrival_lag_min: Math.min(...lags, ...(thing.arrival_lag_min === null ? [] : [Number(thing.arrival_lag_min)])),
      arrival_lag_max: Math.max(...lags, ...(thing.arrival_lag_max === null ? [] : [Number(thing.arrival_lag_max)])),
    })
    .where('thing_id', '=', thingId)
    .execute();
  return written;
}

/** Events deleted: the thing counts them no more (as the services do). */
async function uncount(store: Store, thingId: number, count: number) {
  await store.db
    .updateTable('things')
    .set((eb) => ({ event_count: eb('event_count', '-', count) }))
    .where('thing_id', '=', thingId)
    .execute();
}

/** What a read of the range must answer, from the events written. */
function expected(all: Written[], range: EventRange, order: 'asc' | 'desc') {
  const at = (e: Written) => (range.byCreatedAt ? e.createdAt : e.timestamp);
  const kept = all.filter(
    (e) =>
      (range.notBefore === undefined || e.timestamp >= range.notBefore) &&
      (range.from === undefined || at(e) >= range.from) &&
      (range.to === undefined || at(e) <= range.to),
  );
  const sign = order === 'asc' ? 1 : -1;
  return kept.sort((a, b) => sign * (at(a) - at(b) || a.eventId - b.eventId));
}

/** A thing's rows in a table: its events as rows, or its blocks. */
async function countOf(store: Store, table: 'events' | 'event_blocks', thingId: number) {
  const row = await store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .where('thing_id', '=', thingId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const blockCount = (store: Store, thingId: number) => countOf(store, 'event_blocks', thingId);
const rowCount = (store: Store, thingId: number) => countOf(store, 'events', thingId);

/** Checks every read over these ranges against the events written. */
async function assertReads(store: Store, thingId: number, all: Written[], ranges: EventRange[]) {
  for (const range of ranges) {
    const label = JSON.stringify(range);
    for (const order of ['asc', 'desc'] as const) {
      const want = expected(all, range, order);
      assert.equal(await countEvents(store.db, range), want.length, `count ${label}`);
      for (const [per, offset] of [
        [7, 0],
        [7, 14],
        [50, 3],
        [1000, 0],
        [5, want.length - 2],
        [5, want.length + 10],
      ] as const) {
        const page = await pageOfEvents(store.db, range, order, per, Math.max(0, offset));
        assert.equal(page.total, want.length, `total ${label}`);
        assert.deepEqual(
          page.events.map((e) => [Number(e.timestamp), e.data]),
          want.slice(Math.max(0, offset), Math.max(0, offset) + per).map((e) => [e.timestamp, e.data]),
          `page ${order} ${per}@${offset} ${label}`,
        );
      }
    }
    if (!range.byCreatedAt) {
      const want = expected(all, range, 'asc');
      for (const size of [1, 13, 20_000]) {
        const read: [number, number, string][] = [];
        for await (const chunk of eventChunks(store.db, range, size)) {
          assert.ok(chunk.length <= size);
          for (const [at, id, data] of chunk) read.push([at, id, JSON.stringify(data)]);
        }
        assert.deepEqual(
          read,
          want.map((e) => [e.timestamp, e.eventId, e.data]),
          `chunks of ${size} ${label}`,
        );
      }
    }
  }
  const newest = expected(all, { thingId, from: undefined, to: undefined, byCreatedAt: false }, 'desc')[0];
  assert.deepEqual(await newestEvent(store.db, thingId), newest && { timestamp: newest.timestamp, data: newest.data });
}

function rangesOf(thingId: number, all: Written[]): EventRange[] {
  const times = all.map((e) => e.timestamp).sort((a, b) => a - b);
  const receipts = all.map((e) => e.createdAt).sort((a, b) => a - b);
  const q = (list: number[], f: number) => list[Math.floor((list.length - 1) * f)] as number;
  return [
    { thingId, from: undefined, to: undefined, byCreatedAt: false },
    { thingId, from: undefined, to: undefined, byCreatedAt: false, notBefore: q(times, 0.3) },
    { thingId, from: q(times, 0.1), to: q(times, 0.8), byCreatedAt: false },
    { thingId, from: q(times, 0.45), to: q(times, 0.46), byCreatedAt: false },
    { thingId, from: q(times, 0.2), to: undefined, byCreatedAt: false, notBefore: q(times, 0.5) },
    { thingId, from: q(receipts, 0.1), to: q(receipts, 0.7), byCreatedAt: true },
    { thingId, from: undefined, to: q(receipts, 0.5), byCreatedAt: true, notBefore: q(times, 0.2) },
    { thingId, from: T0 - 10 * HOUR, to: T0 - 9 * HOUR, byCreatedAt: false },
    // Everything expired, whole blocks included (counted as the thing's count less the expired).
    { thingId, from: undefined, to: undefined, byCreatedAt: false, notBefore: (times.at(-1) as number) + 1 },
    { thingId, from: undefined, to: undefined, byCreatedAt: true, notBefore: (times.at(-1) as number) + 1 },
  ];
}

describe('the event block codec', () => {
  it('when events of every shape are encoded then they decode to the same rows, byte for byte', () => {
    const next = random(7);
    const events = Array.from({ length: 500 }, (_, i) => ({
      eventId: 10 + i * 3 - (i % 5),
      timestamp: T0 + Math.floor(i / 2) * 1000,
      createdAt: T0 + i * 1000 + Math.floor(next() * 5000) - 2000,
      data: JSON.stringify(dataOf(i, next)),
      waypoint: i % 4 === 0 ? JSON.stringify([next() * 90, next() * 180]) : null,
    }));
    assert.deepEqual(decodeBlock(encodeBlock(events)), events);
  });

  it('when a thing reports 3 numeric metrics every second then a block holds an event in a few bytes', () => {
    const events = Array.from({ length: 3600 }, (_, i) => ({
      eventId: 1 + i,
      timestamp: T0 + i * 1000,
      createdAt: T0 + i * 1000 + 40,
      data: JSON.stringify({ temperature: 20 + (i % 50) / 10, pressure: 1 + (i % 13) / 20, rpm: 900 + (i % 400) }),
      waypoint: null,
    }));
    const body = encodeBlock(events);
    assert.ok(body.length / events.length < 5, `${body.length / events.length} bytes per event`);
    assert.deepEqual(decodeBlock(body), events);
  });

  it('when strings hold quotes, escapes and digits then the block stays columnar', () => {
    const states = ['idle "cold"', 'run\\2\n', 'é \u0001 -1.5e3', '{"x":1}'];
    const events = Array.from({ length: 3600 }, (_, i) => ({
      eventId: 1 + i,
      timestamp: T0 + i * 1000,
      createdAt: T0 + i * 1000 + 40,
      data: JSON.stringify({ state: states[i % 4], 'a-1': { list: [i % 7, `n${i % 3}`] }, t: 20 + (i % 50) / 10 }),
      waypoint: null,
    }));
    const body = encodeBlock(events);
    // Columns of repeated values take a tenth of a byte an event; the texts alone, deflated, take 3.5.
    assert.ok(body.length / events.length < 1, `${body.length / events.length} bytes per event`);
    assert.deepEqual(decodeBlock(body), events);
  });

  it('when texts are not written as the server writes JSON then they still decode byte for byte', () => {
    const texts = [
      '{ "a": 1 }',
      '{"a":"\\u00e9"}',
      '{"a":1.50}',
      '{"b":1,"1":2}',
      '{"a":-0}',
      '{"a":1E5}',
      '{"a":[1,"2"]}',
    ];
    const events = texts.map((data, i) => ({
      eventId: 1 + i,
      timestamp: T0 + i * 1000,
      createdAt: T0 + i * 1000,
      data,
      waypoint: null,
    }));
    for (const event of events) assert.deepEqual(decodeBlock(encodeBlock([event])), [event]);
    assert.deepEqual(decodeBlock(encodeBlock(events)), events);
  });
});

for (const storeCase of STORES) {
  describe(`the compact event store [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    let store: Store;
    let settings: { databaseUrl: string; databaseSchema?: string };
    before(async () => {
      settings = storeCase.fresh();
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    });
    after(async () => {
      await store.close();
      await storeCase.dispose(settings);
    });

    it('when whole blocks have expired then one sweep step deletes each whole and rewrites the one across the cut once', async () => {
      const { thingId } = await thingOf(store);
      // Two and a half hours of events 4 s apart, every one compacted: blocks of 900 events.
      const times = Array.from({ length: 2250 }, (_, i) => T0 + i * 4000);
      let all = await write(
        store,
        thingId,
        times.map((timestamp, i) => ({ timestamp, createdAt: timestamp + 100, data: { n: i } })),
      );
      await new EventCompactor(store, { ageMs: 0 }).compact();
      assert.equal(await rowCount(store, thingId), 0);
      const expiry = T0 + 1.5 * HOUR;
      const expired = all.filter((e) => e.timestamp < expiry).length;
      // Steps of 100 events: the first block (900) goes whole, then the second loses its first half at once.
      const step = () => store.transaction((tx) => deleteEventsBefore(tx, thingId, expiry, 100));
      const steps = [await step(), await step(), await step()];
      assert.deepEqual(steps, [900, 450, 0]);
      const swept = (steps[0] as number) + (steps[1] as number);
      assert.equal(swept, expired);
      await uncount(store, thingId, swept);
      all = all.filter((e) => e.timestamp >= expiry);
      await assertReads(store, thingId, all, rangesOf(thingId, all));
    });

    it('when events are compacted in part, with late rows inside blocks, then every read answers exactly what rows would', async () => {
      const { thingId, organisationKey, thingKey } = await thingOf(store);
      const next = random(11);
      // Three hours of events a few seconds apart, some sharing a time, received a little later.
      const first = Array.from({ length: 1500 }, (_, i) => {
        const timestamp = T0 + Math.floor(i * 7.3) * 1000 - (i % 11 === 0 ? 1000 : 0);
        return { timestamp, createdAt: timestamp + 500 + Math.floor(next() * 3000), data: dataOf(i, next) };
      });
      let all = await write(store, thingId, first);
      await assertReads(store, thingId, all, rangesOf(thingId, all));
      // Everything older than the last hour's start into blocks.
      const compactor = new EventCompactor(store, { ageMs: HOUR, now: () => T0 + 3 * HOUR });
      assert.ok((await compactor.compact()) > 0);
      assert.ok((await blockCount(store, thingId)) >= 2, 'blocks written');
      assert.ok((await rowCount(store, thingId)) > 0, 'rows left');
      await assertReads(store, thingId, all, rangesOf(thingId, all));
      // Late events inside the blocks' time, received much later, then everything compacted.
      const late = Array.from({ length: 120 }, (_, i) => {
        const timestamp = T0 + i * 60_000 + (i % 3) * 7000;
        return { timestamp, createdAt: T0 + 5 * HOUR + i, data: dataOf(i + 3, next) };
      });
      all = [...all, ...(await write(store, thingId, late))];
      await assertReads(store, thingId, all, rangesOf(thingId, all));
      await new EventCompactor(store, { ageMs: 0 }).compact();
      assert.equal(await rowCount(store, thingId), 0, 'every event compacted');
      await assertReads(store, thingId, all, rangesOf(thingId, all));
      // Realtime push reads an event by its time.
      const sample = all[all.length - 1] as Written;
      assert.equal(await eventDataAt(store.db, organisationKey, thingKey, sample.timestamp, Date.now()), sample.data);
      assert.equal(await eventDataAt(store.db, organisationKey, thingKey, T0 - HOUR, Date.now()), undefined);

      // A range delete drops whole blocks and rewrites those across its ends; retention the oldest.
      const cutFrom = T0 + 40 * 60_000 + 500;
      const cutTo = T0 + 2 * HOUR + 10_000;
      const deleted = await store.transaction((tx) => deleteEventsBetween(tx, thingId, cutFrom, cutTo));
      const left = all.filter((e) => e.timestamp < cutFrom || e.timestamp > cutTo);
      assert.equal(deleted, all.length - left.length);
      await uncount(store, thingId, deleted);
      all = left;
      await assertReads(store, thingId, all, rangesOf(thingId, all));
      const expiry = T0 + 25 * 60_000;
      let swept = 0;
      for (;;) {
        const n = await store.transaction((tx) => deleteEventsBefore(tx, thingId, expiry, 100));
        swept += n;
        if (n < 100) break;
      }
      const kept = all.filter((e) => e.timestamp >= expiry);
      assert.equal(swept, all.length - kept.length);
      await uncount(store, thingId, swept);
      all = kept;
      await assertReads(store, thingId, all, rangesOf(thingId, all));
    });
  });
}
