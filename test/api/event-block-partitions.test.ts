/**
 * The partitions of the event blocks on PostgreSQL (docs/storage.md, "Partitions"): made on demand
 * when a block is written into a month without one, dropped by the sweeper once all their blocks
 * have expired, counts and last events kept exact. SQLite has no partitions: the suite is
 * PostgreSQL's only.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Kysely, Migrator, sql } from 'kysely';
import pg from 'pg';
import { SYSTEM_ACTOR } from '../../src/audit/recorder.ts';
import { EventCompactor } from '../../src/events/compactor.ts';
import { ensurePartition, partitionOf, partitions } from '../../src/events/partitions.ts';
import { deleteEventsBetween, pageOfEvents } from '../../src/events/repository.ts';
import { RetentionSweeper } from '../../src/events/sweeper.ts';
import { EventWriter, type SubjectThing } from '../../src/events/writer.ts';
import { provisionOrganisation } from '../../src/organisations/service.ts';
import { createDialect } from '../../src/store/dialect.ts';
import { MIGRATIONS } from '../../src/store/migrations/index.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import type { Database } from '../../src/store/tables.ts';
import { createThing } from '../../src/things/service.ts';
import { storedEventsOfThing } from '../support/fixtures.ts';
import { STORES } from '../support/stores.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const postgres = STORES.find((s) => s.name === 'postgres');

/** The first instant of the month (UTC) `months` before this one. */
const monthsAgo = (months: number) => {
  const now = new Date();
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - months, 1);
};

interface Fleet {
  store: Store;
  writer: EventWriter;
  /** Makes an organisation and its things; answers their ids. Its retention is set by `applyRetentions`. */
  organisation(retentionDays: number | null, things: number): Promise<number[]>;
  /** Stores a thing's events at these times, each `{ n }`, and compacts every one into blocks. */
  events(thingId: number, times: number[]): Promise<void>;
  /** Sets the organisations' retentions, once their events are written (the writer keeps nothing of an event that arrives expired). */
  applyRetentions(): Promise<void>;
}

async function fleetOn(store: Store): Promise<Fleet> {
  const writer = new EventWriter(store);
  const subjects = new Map<number, { organisationKey: string; thing: SubjectThing }>();
  const retentions: [string, number | null][] = [];
  return {
    store,
    writer,
    async organisation(retentionDays, count) {
      const { organisation } = await provisionOrganisation(store.db, {
        name: `partitioned ${retentions.length}`,
        isOem: false,
        parentKey: null,
      });
      const template = await store.db
        .selectFrom('thing_templates')
        .select(['thing_template_key', 'metrics'])
        .where('organisation_key', '=', organisation.organisation_key)
        .executeTakeFirstOrThrow();
      const ids: number[] = [];
      for (let i = 0; i < count; i++) {
        const row = await createThing(store, SYSTEM_ACTOR, organisation.organisation_key, {
          name: `thing ${i}`,
          thing_template_key: template.thing_template_key,
        });
        const thing = {
          thing_key: row.thing_key,
          thing_template_key: template.thing_template_key,
          metrics: template.metrics,
        };
        subjects.set(Number(row.thing_id), { organisationKey: organisation.organisation_key, thing });
        ids.push(Number(row.thing_id));
      }
      retentions.push([organisation.organisation_key, retentionDays]);
      return ids;
    },
    async events(thingId, times) {
      const subject = subjects.get(thingId) as { organisationKey: string; thing: SubjectThing };
      for (let i = 0; i < times.length; i += 1000) {
        await writer.write({
          events: times.slice(i, i + 1000).map((timestamp, j) => ({
            thingId,
            timestamp,
            data: { n: i + j },
            waypoint: null,
          })),
          subject: { organisationKey: subject.organisationKey, things: new Map([[thingId, subject.thing]]) },
        });
      }
      await new EventCompactor(store, { ageMs: 0 }).compactThings([thingId]);
    },
    async applyRetentions() {
      for (const [organisationKey, days] of retentions) {
        await store.db
          .updateTable('organisations')
          .set({ retention_days: days })
          .where('organisation_key', '=', organisationKey)
          .execute();
      }
    },
  };
}

/** A thing's events as stored (rows and blocks) and as it counts them, and its last event's time. */
async function thingState(store: Store, thingId: number) {
  const thing = await store.db
    .selectFrom('things')
    .select(['event_count', 'last_event_timestamp'])
    .where('thing_id', '=', thingId)
    .executeTakeFirstOrThrow();
  return {
    stored: await storedEventsOfThing(store, thingId),
    counted: Number(thing.event_count),
    last: thing.last_event_timestamp === null ? null : Number(thing.last_event_timestamp),
  };
}

/** Every event of a thing as stored (no retention applied), oldest first, as its `n`. */
async function storedEvents(store: Store, thingId: number): Promise<number[]> {
  const page = await pageOfEvents(
    store.db,
    { thingId, from: undefined, to: undefined, byCreatedAt: false },
    'asc',
    100_000,
    0,
  );
  return page.events.map((e) => JSON.parse(e.data).n);
}

const hourly = (from: number, hours: number) => Array.from({ length: hours }, (_, i) => from + i * HOUR + 60_000);

describe('partitions of the event blocks [postgres]', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  let settings: { databaseUrl: string; databaseSchema?: string };
  let store: Store;
  let fleet: Fleet;

  // A store of its own for each test: a sweep drops any partition wholly expired, empty ones included.
  beforeEach(async () => {
    settings = (postgres as NonNullable<typeof postgres>).fresh();
    store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    fleet = await fleetOn(store);
  });

  afterEach(async () => {
    await fleet?.writer.drain();
    await store?.close();
    await postgres?.dispose(settings);
  });

  it('when blocks are written into a month without a partition then the month gets one', async () => {
    const [thing] = await fleet.organisation(null, 1);
    const month = monthsAgo(9);
    await fleet.events(thing as number, hourly(month, 3));
    const listed = await partitions(store.db);
    const partition = listed.find((p) => p.from === month);
    assert.ok(partition, `a partition for ${new Date(month).toISOString()}`);
    assert.equal(partition.to, monthsAgo(8));
    const inIt = await sql<{ n: string }>`select count(*) as n from ${sql.id(partition.name)}`.execute(store.db);
    assert.equal(Number(inIt.rows[0]?.n), 3, 'one block an hour, in the month of its events');
  });

  it('when a store made before partitions is migrated then its blocks are copied into a partition per month, ids kept', async () => {
    const earlier = (postgres as NonNullable<typeof postgres>).fresh();
    const schema = earlier.databaseSchema as string;
    const db = new Kysely<Database>({ dialect: createDialect(earlier.databaseUrl, schema) });
    const blocks = [monthsAgo(3) + HOUR, monthsAgo(3) + 5 * DAY, monthsAgo(2) + 2 * HOUR].map((at) => ({
      thing_id: 1,
      min_timestamp: at,
      max_timestamp: at + 1000,
      min_created_at: at,
      max_created_at: at + 1000,
      event_count: 2,
      body: new Uint8Array([1, 2, 3]),
    }));
    try {
      await sql`create schema ${sql.id(schema)}`.execute(db);
      const migrator = new Migrator({
        db,
        migrationTableSchema: schema,
        provider: {
          getMigrations: async () => Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '014')),
        },
      });
      const { error } = await migrator.migrateToLatest();
      assert.ifError(error);
      await db.insertInto('event_blocks').values(blocks).execute();
    } finally {
      await db.destroy();
    }
    const migrated = await openStore({ databaseUrl: earlier.databaseUrl, schema });
    try {
      const rows = await sql<{ block_id: string; min_timestamp: string; name: string }>`
        select block_id, min_timestamp, tableoid::regclass::text as name from event_blocks order by block_id`.execute(
        migrated.db,
      );
      assert.deepEqual(
        rows.rows.map((r) => [Number(r.block_id), Number(r.min_timestamp), r.name]),
        blocks.map((b, i) => [i + 1, b.min_timestamp, partitionOf(b.min_timestamp).name]),
      );
      assert.deepEqual(
        (await partitions(migrated.db)).map((p) => p.name),
        [partitionOf(monthsAgo(3)).name, partitionOf(monthsAgo(2)).name],
      );
      const added = await migrated.db
        .insertInto('event_blocks')
        .values({ ...blocks[0], min_timestamp: monthsAgo(3) + 2 * HOUR } as never)
        .returning('block_id')
        .executeTakeFirstOrThrow();
      assert.equal(Number(added.block_id), 4, 'ids go on from the same sequence');
    } finally {
      await migrated.close();
      await postgres?.dispose(earlier);
    }
  });

  it('when several instances make the same partition at once then each ends with it there', async () => {
    const instances = await Promise.all(
      Array.from({ length: 4 }, () =>
        openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema }),
      ),
    );
    try {
      for (let months = 20; months < 24; months++) {
        const at = monthsAgo(months) + DAY;
        assert.deepEqual(await Promise.all(instances.map((s) => ensurePartition(s, at))), [true, true, true, true]);
        assert.ok((await partitions(store.db)).some((p) => p.name === partitionOf(at).name));
      }
    } finally {
      await Promise.all(instances.map((s) => s.close()));
    }
  });

  it('when another instance dropped a partition this one knew then its compactor makes it again', async () => {
    const [thing] = (await fleet.organisation(null, 1)) as [number];
    const month = monthsAgo(11);
    assert.equal(await ensurePartition(store, month), true, 'known here from now on');
    const other = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    try {
      const swept = await new RetentionSweeper(other).sweep();
      assert.equal(swept.partitions, 1, 'empty and ended: dropped by the other instance');
    } finally {
      await other.close();
    }
    await fleet.events(thing, hourly(month, 2));
    assert.deepEqual(await thingState(store, thing), { stored: 2, counted: 2, last: month + HOUR + 60_000 });
    assert.ok((await partitions(store.db)).some((p) => p.name === partitionOf(month).name));
  });

  it('when a long read holds the table then a drop gives up after its wait, and the blocks are deleted one by one', async () => {
    const [thing] = (await fleet.organisation(30, 1)) as [number];
    await fleet.events(thing, hourly(monthsAgo(3), 4));
    await fleet.applyRetentions();
    const reader = new pg.Client({ connectionString: settings.databaseUrl });
    await reader.connect();
    try {
      await reader.query(`set search_path = "${settings.databaseSchema}"`);
      await reader.query('begin');
      await reader.query('select count(*) from event_blocks');
      const swept = await new RetentionSweeper(store).sweep();
      assert.deepEqual([swept.partitions, swept.events], [0, 4]);
      assert.deepEqual(await thingState(store, thing), { stored: 0, counted: 0, last: null });
    } finally {
      await reader.query('rollback');
      await reader.end();
    }
    assert.equal((await new RetentionSweeper(store).sweep()).partitions, 1, 'dropped, empty, once the read is done');
  });

  it('when blocks are written across the end of a month then each side is in its month, read and deleted as one range', async () => {
    const [thing] = await fleet.organisation(null, 1);
    const thingId = thing as number;
    const boundary = monthsAgo(14);
    // Every ten minutes from two hours before the month's end to two hours after.
    const times = Array.from({ length: 24 }, (_, i) => boundary - 2 * HOUR + i * 600_000);
    await fleet.events(thingId, times);
    const byMonth = await sql<{ name: string; n: string }>`
      select tableoid::regclass::text as name, sum(event_count) as n from event_blocks
      where thing_id = ${thingId} group by 1 order by 1`.execute(store.db);
    assert.deepEqual(
      byMonth.rows.map((r) => [r.name, Number(r.n)]),
      [
        [partitionOf(boundary - 1).name, 12],
        [partitionOf(boundary).name, 12],
      ],
    );
    assert.deepEqual(await storedEvents(store, thingId), [...times.keys()]);
    const desc = await pageOfEvents(
      store.db,
      { thingId, from: boundary - HOUR, to: boundary + HOUR - 1, byCreatedAt: false },
      'desc',
      100,
      0,
    );
    assert.equal(desc.total, 12);
    assert.deepEqual(
      desc.events.map((e) => JSON.parse(e.data).n),
      [17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6],
    );
    // A range across the boundary: blocks rewritten on both sides, each in its own partition.
    const removed = await store.transaction((tx) =>
      deleteEventsBetween(tx, thingId, boundary - 1800_000, boundary + 1800_000 - 1),
    );
    assert.equal(removed, 6);
    assert.deepEqual(
      await storedEvents(store, thingId),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 17, 18, 19, 20, 21, 22, 23],
    );
  });

  it('when every block of a partition has expired then the sweep drops it, and its events are neither stored, counted nor answered', async () => {
    const [a, b] = (await fleet.organisation(30, 2)) as [number, number];
    const old = monthsAgo(4);
    const recent = hourly(Date.now() - 2 * DAY, 2);
    await fleet.events(a, [...hourly(old, 5), ...recent]);
    await fleet.events(b, hourly(old + 3 * DAY, 4));
    await fleet.applyRetentions();
    const name = partitionOf(old).name;
    const swept = await new RetentionSweeper(store).sweep();
    assert.equal(swept.partitions, 1);
    assert.equal(swept.events, 9);
    assert.ok(!(await partitions(store.db)).some((p) => p.name === name), 'the partition is gone');
    assert.deepEqual(await thingState(store, a), { stored: 2, counted: 2, last: recent[1] });
    assert.deepEqual(await thingState(store, b), { stored: 0, counted: 0, last: null }, 'its newest event is gone too');
    assert.deepEqual(await storedEvents(store, a), [5, 6]);
  });

  it('when a partition holds a block of a thing that keeps its events then it stays, and the expired blocks in it are deleted one by one', async () => {
    const [expiring] = (await fleet.organisation(30, 1)) as [number];
    const [kept] = (await fleet.organisation(null, 1)) as [number];
    const old = monthsAgo(5);
    await fleet.events(expiring, hourly(old, 6));
    await fleet.events(kept, hourly(old + DAY, 2));
    await fleet.applyRetentions();
    const swept = await new RetentionSweeper(store).sweep();
    assert.equal(swept.partitions, 0);
    assert.equal(swept.events, 6);
    assert.ok(
      (await partitions(store.db)).some((p) => p.name === partitionOf(old).name),
      'the partition stays',
    );
    assert.deepEqual(await thingState(store, expiring), { stored: 0, counted: 0, last: null });
    assert.deepEqual((await thingState(store, kept)).stored, 2);
    assert.deepEqual(await storedEvents(store, kept), [0, 1]);
  });

  it('when two instances sweep at once then each partition is dropped once and every count matches what is stored', async () => {
    const things = (await fleet.organisation(30, 3)) as number[];
    const expired: number[] = [];
    for (const [i, thing] of things.entries()) {
      // Three months of expired blocks each, and a few kept rows.
      const times = [6, 7, 8].flatMap((m) => hourly(monthsAgo(m) + i * DAY, 3));
      expired.push(times.length);
      await fleet.events(thing, [...times, ...hourly(Date.now() - DAY, 1)]);
    }
    await fleet.applyRetentions();
    const other = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    try {
      const [one, two] = await Promise.all([new RetentionSweeper(store).sweep(), new RetentionSweeper(other).sweep()]);
      assert.equal(one.partitions + two.partitions, 3, 'each of the three months once');
      assert.equal(
        one.events + two.events,
        expired.reduce((a, b) => a + b, 0),
        'each expired event counted by the one instance that removed it',
      );
      const names = new Set((await partitions(store.db)).map((p) => p.name));
      for (const m of [6, 7, 8]) assert.ok(!names.has(partitionOf(monthsAgo(m)).name));
      for (const thing of things) {
        const state = await thingState(store, thing);
        assert.deepEqual([state.stored, state.counted], [1, 1]);
      }
    } finally {
      await other.close();
    }
  });
});
