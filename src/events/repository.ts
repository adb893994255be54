/**
 * The events table, which the events capability owns: the event writer adds rows (events/writer.ts)
 * and queries read them (through events/service.ts), all through this module.
 */
import { sql } from 'kysely';
import { hasExpired } from '../core/retention.ts';
import { engineOfDb, jsonRowsText, RowsStatement } from '../store/dialect.ts';
import { QueryCache } from '../store/prepared.ts';
import type { Executor, Tx } from '../store/store.ts';

/** An event as the writer stores it. */
export interface NewEvent {
  thingId: number;
  /** When it happened (ms). */
  timestamp: number;
  data: Record<string, unknown>;
  waypoint: [number, number] | null;
}

/** Reads its rows from one parameter per column (store/dialect.ts, RowsStatement): compiled once. */
const insertRows = new RowsStatement(
  ['bigint', 'bigint', 'text', 'text'],
  (extra) => `insert into events (thing_id, timestamp, created_at, data, waypoint)
    select v.column1, v.column2, cast(${extra(0)} as bigint), v.column3, v.column4 from v`,
);

export function insertEvents(tx: Tx, events: NewEvent[], now: number) {
  return insertRows.run(
    tx,
    [
      events.map((e) => e.thingId),
      events.map((e) => e.timestamp),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => (e.waypoint ? JSON.stringify(e.waypoint) : null)),
    ],
    [now],
  );
}

/* Reads of stored events, for queries and the rollups' rebuild. */

export interface EventRange {
  thingId: number;
  from: number | undefined;
  to: number | undefined;
  /** Filter on the receipt time instead of the event time. */
  byCreatedAt: boolean;
  /**
   * Events of an earlier time (ms) have expired (docs/storage.md, "Retention"): never answered, whether
   * or not the sweeper has deleted them yet.
   */
  notBefore?: number | undefined;
}

export interface StoredEvent {
  timestamp: number;
  data: string;
}

const queries = new QueryCache();

function rangeValues(range: EventRange) {
  return { thing: range.thingId, from: range.from, to: range.to, notBefore: range.notBefore };
}

/** What makes the statements of a range differ in shape, for their cache keys. */
const shapeOf = (range: EventRange) => `${range.byCreatedAt}|${range.notBefore !== undefined}`;

/**
 * The range's events as a query. A receipt-time range is read through the (thing, event time) index
 * too: an event received at `created_at` happened at `created_at` minus its arrival lag, which lies
 * within the thing's lag bounds (`things.arrival_lag_min/max`, kept by the event writer), so the
 * receipt times [from, to] hold only event times in [from - largest lag, to - smallest lag]. The
 * bounds are read in the same statement, so they cover every event it sees. A thing whose devices
 * send as things happen has a lag of seconds and the read stays narrow; one that once uploaded old
 * readings widens its own reads by that age.
 */
function rangeQuery(db: Executor, range: EventRange, v: Record<string, unknown>) {
  let query = db.selectFrom('events').where('thing_id', '=', v.thing as number);
  if (v.notBefore !== undefined) query = query.where('timestamp', '>=', v.notBefore as number);
  if (!range.byCreatedAt) {
    if (v.from !== undefined) query = query.where('timestamp', '>=', v.from as number);
    if (v.to !== undefined) query = query.where('timestamp', '<=', v.to as number);
    return query;
  }
  const lag = (bound: 'arrival_lag_min' | 'arrival_lag_max') =>
    db
      .selectFrom('things')
      .select(bound)
      .where('thing_id', '=', v.thing as number);
  if (v.from !== undefined) {
    query = query
      .where('timestamp', '>=', sql<number>`${v.from} - (${lag('arrival_lag_max')})`)
      .where('created_at', '>=', v.from as number);
  }
  if (v.to !== undefined) {
    query = query
      .where('timestamp', '<=', sql<number>`${v.to} - (${lag('arrival_lag_min')})`)
      .where('created_at', '<=', v.to as number);
  }
  return query;
}

/**
 * The range's count as a query: a thing's whole history is counted as it is written
 * (`things.event_count`), so only a bounded range counts its events. Under retention, the expired
 * events the sweeper has not deleted yet (at most an hour's worth) are counted and taken off.
 */
function countQuery(db: Executor, range: EventRange, v: Record<string, unknown>) {
  if (v.from === undefined && v.to === undefined) {
    if (v.notBefore === undefined) {
      return db
        .selectFrom('things')
        .select('event_count as count')
        .where('thing_id', '=', v.thing as number);
    }
    const expired = db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('expired'))
      .where('thing_id', '=', v.thing as number)
      .where('timestamp', '<', v.notBefore as number);
    return db
      .selectFrom('things')
      .select(sql<number>`event_count - (${expired})`.as('count'))
      .where('thing_id', '=', v.thing as number);
  }
  return rangeQuery(db, range, v).select((eb) => eb.fn.countAll().as('count'));
}

export async function countEvents(db: Executor, range: EventRange): Promise<number> {
  const [row] = await queries.execute(db, `count|${shapeOf(range)}`, rangeValues(range), (v) =>
    countQuery(db, range, v),
  );
  return Number((row as { count?: unknown } | undefined)?.count ?? 0);
}

/**
 * A page of the range's events and their total, in one statement: the total is an uncorrelated
 * subquery evaluated once. Only a page past the end, with no row to carry it, counts again.
 */
export async function pageOfEvents(
  db: Executor,
  range: EventRange,
  order: 'asc' | 'desc',
  limit: number,
  /** Undefined for a page beyond any store (store/paging.ts): it is empty. */
  offset: number | undefined,
): Promise<{ total: number; events: StoredEvent[] }> {
  if (offset === undefined) return { total: await countEvents(db, range), events: [] };
  const column = range.byCreatedAt ? 'created_at' : 'timestamp';
  const rows = (await queries.execute(
    db,
    `page|${shapeOf(range)}|${order}|${limit}|${offset}`,
    rangeValues(range),
    (v) =>
      rangeQuery(db, range, v)
        .select(['timestamp', 'data'])
        .select(() => countQuery(db, range, v).as('total'))
        .orderBy(column, order)
        .orderBy('event_id', order)
        .limit(sql.lit(limit))
        .offset(sql.lit(offset)),
  )) as (StoredEvent & { total: number | string })[];
  const total = rows.length > 0 ? Number(rows[0]?.total) : await countEvents(db, range);
  return { total, events: rows };
}

/** Events as [time (ms), event id, data], oldest first. */
export type EventTriple = [number, number, Record<string, unknown>];

/** Orders events by time, then by id (their order of arrival). */
export const byTimeThenId = (a: EventTriple, b: EventTriple) => a[0] - b[0] || a[1] - b[1];

/**
 * Every event of the range in time order, for aggregation, in chunks of at most `size` events so memory
 * stays bounded. A chunk is read as one text and parsed once, which costs about half of reading and
 * parsing one row at a time.
 */
export async function* eventChunks(db: Executor, range: EventRange, size = 20_000): AsyncGenerator<EventTriple[]> {
  const engine = engineOfDb(db);
  let after: EventTriple | undefined;
  for (;;) {
    const values = { ...rangeValues(range), afterAt: after?.[0], afterId: after?.[1] };
    const [row] = (await queries.execute(db, `chunk|${shapeOf(range)}|${size}`, values, (v) => {
      let page = rangeQuery(db, range, v).select(['timestamp', 'event_id', 'data']);
      if (v.afterAt !== undefined) {
        page = page.where((eb) =>
          eb.or([
            eb('timestamp', '>', v.afterAt as number),
            eb.and([eb('timestamp', '=', v.afterAt as number), eb('event_id', '>', v.afterId as number)]),
          ]),
        );
      }
      const ordered = page.orderBy('timestamp', 'asc').orderBy('event_id', 'asc').limit(sql.lit(size));
      const columns = ['page.timestamp', 'page.event_id', 'page.data'];
      return db
        .selectFrom(ordered.as('page'))
        .select(jsonRowsText(engine, columns, ['page.timestamp', 'page.event_id']).as('rows'));
    })) as { rows: string | null }[];
    if (!row?.rows) return;
    const events = JSON.parse(`[${row.rows}]`) as EventTriple[];
    if (!events.every((e, i) => i === 0 || byTimeThenId(events[i - 1] as EventTriple, e) <= 0)) {
      events.sort(byTimeThenId);
    }
    yield events;
    if (events.length < size) return;
    after = events[events.length - 1];
  }
}

/**
 * The data (JSON text) of a thing's event at a time, or undefined, also when it has expired at `now`
 * (docs/storage.md, "Retention"): realtime push reads one told without it.
 */
export async function eventDataAt(
  db: Executor,
  organisationKey: string,
  thingKey: string,
  timestamp: number,
  now: number,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('events as e')
    .innerJoin('things as t', 't.thing_id', 'e.thing_id')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .innerJoin('organisations as o', 'o.organisation_key', 't.organisation_key')
    .select('e.data')
    .select((eb) => eb.fn.coalesce('tt.retention_days', 'o.retention_days').as('retention_days'))
    .where('t.organisation_key', '=', organisationKey)
    .where('t.thing_key', '=', thingKey)
    .where('e.timestamp', '=', timestamp)
    .executeTakeFirst();
  return row && !hasExpired(timestamp, row.retention_days, now) ? row.data : undefined;
}

/** The days of event retention of each of these things (its template's, else its organisation's; null: for ever). */
export async function eventRetentionOf(db: Executor, thingIds: readonly number[]): Promise<Map<number, number | null>> {
  if (thingIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .innerJoin('organisations as o', 'o.organisation_key', 't.organisation_key')
    .select('t.thing_id')
    .select((eb) => eb.fn.coalesce('tt.retention_days', 'o.retention_days').as('retention_days'))
    .where('t.thing_id', 'in', thingIds)
    .execute();
  return new Map(rows.map((r) => [Number(r.thing_id), r.retention_days === null ? null : Number(r.retention_days)]));
}

/* Deletions: retention (events/sweeper.ts) and range deletes (events/lifecycle.ts). */

/** A thing whose events or rollups expire, with its days of each (docs/storage.md). */
export interface RetainedThing {
  thingId: number;
  retentionDays: number | null;
  rollupRetentionDays: number | null;
}

/**
 * The things under a retention whose id is above `after`, at most `limit` of them in id order: its
 * template's or its organisation's days of events, its organisation's of rollups.
 */
export async function retainedThings(db: Executor, after: number, limit: number): Promise<RetainedThing[]> {
  const rows = await db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .innerJoin('organisations as o', 'o.organisation_key', 't.organisation_key')
    .select(['t.thing_id', 'o.rollup_retention_days'])
    .select((eb) => eb.fn.coalesce('tt.retention_days', 'o.retention_days').as('retention_days'))
    .where((eb) =>
      eb.or([
        eb('tt.retention_days', 'is not', null),
        eb('o.retention_days', 'is not', null),
        eb('o.rollup_retention_days', 'is not', null),
      ]),
    )
    .where('t.thing_id', '>', after)
    .orderBy('t.thing_id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    thingId: Number(r.thing_id),
    retentionDays: r.retention_days,
    rollupRetentionDays: r.rollup_retention_days,
  }));
}

/**
 * Deletes at most `limit` of a thing's oldest events older than `before` (ms), through its (thing,
 * time) index; answers how many. Instances deleting at once (PostgreSQL) each delete only rows still
 * there, so each counts only its own.
 */
export async function deleteEventsBefore(tx: Tx, thingId: number, before: number, limit: number): Promise<number> {
  const result = await tx
    .deleteFrom('events')
    .where('event_id', 'in', (eb) =>
      eb
        .selectFrom('events')
        .select('event_id')
        .where('thing_id', '=', thingId)
        .where('timestamp', '<', before)
        .orderBy('timestamp')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deletes a thing's events whose time is in [from, to] (ms); answers how many. */
export async function deleteEventsBetween(tx: Tx, thingId: number, from: number, to: number): Promise<number> {
  const result = await tx
    .deleteFrom('events')
    .where('thing_id', '=', thingId)
    .where('timestamp', '>=', from)
    .where('timestamp', '<=', to)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** A thing's newest stored event by its own time (its data as JSON text), or undefined. */
export async function newestEvent(db: Executor, thingId: number): Promise<StoredEvent | undefined> {
  const row = await db
    .selectFrom('events')
    .select(['timestamp', 'data'])
    .where('thing_id', '=', thingId)
    .orderBy('timestamp', 'desc')
    .orderBy('event_id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && { timestamp: Number(row.timestamp), data: row.data };
}
