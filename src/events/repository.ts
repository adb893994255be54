/**
 * The events table, which the events capability owns: the event writer adds rows (events/writer.ts)
 * and queries read them (through events/service.ts), all through this module.
 */
import { sql } from 'kysely';
import { giveWay } from '../core/give-way.ts';
import { hasExpired } from '../core/retention.ts';
import { beyondPosition, engineOfDb, jsonRowsText, RowsStatement } from '../store/dialect.ts';
import { QueryCache } from '../store/prepared.ts';
import type { Executor, Tx } from '../store/store.ts';
import { type BlockEvent, decodeBlock } from './block-codec.ts';
import {
  BLOCK_COLUMNS,
  BLOCK_SPAN_MS,
  BlockCache,
  type BlockInfo,
  blockInside,
  blockOf,
  type blockRow,
  deleteBlock,
  eventInside,
  insertBlock,
  insideOf,
  overlapping,
  overlapsOf,
  rewriteBlock,
} from './blocks.ts';

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

/** Where a read goes on from: after (or before) a position, by time or receipt time, then id. */
interface Beyond {
  column: 'timestamp' | 'created_at';
  beyond: ['>' | '<', [number, number]];
}

/** The events after a position in a read's order: by time (event or receipt time), then by id. */
const beyondOf = (column: Beyond['column'], order: 'asc' | 'desc', position: Position): Beyond => ({
  column,
  beyond: [order === 'asc' ? '>' : '<', [position.at, position.id]],
});

/**
 * The range's events as a query. A receipt-time range is read through the (thing, event time) index
 * too: an event received at `created_at` happened at `created_at` minus its arrival lag, which lies
 * within the thing's lag bounds (`things.arrival_lag_min/max`, kept by the event writer), so the
 * receipt times [from, to] hold only event times in [from - largest lag, to - smallest lag]. The
 * bounds are read in the same statement, so they cover every event it sees. A thing whose devices
 * send as things happen has a lag of seconds and the read stays narrow; one that once uploaded old
 * readings widens its own reads by that age.
 */
function rangeQuery(db: Executor, range: EventRange, v: Record<string, unknown>, after?: Beyond) {
  let query = db.selectFrom('events').where('thing_id', '=', v.thing as number);
  // Ahead of the range's own bounds: SQLite starts the index's range at the first bound of the time
  // it is given, and would read from the range's start at every page.
  if (after) query = query.where(beyondPosition(engineOfDb(db), [after.column, 'event_id'], ...after.beyond));
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
  const [row] = (await queries.execute(db, `count|${shapeOf(range)}`, rangeValues(range), (v) =>
    db
      .selectNoFrom([countQuery(db, range, v).as('count')])
      .select((eb) => eb.exists(blocksQuery(db, range, v)).as('blocked')),
  )) as { count: unknown; blocked: unknown }[];
  // Blocks hold events the rows do not (read in the same statement, so as they were when it ran).
  return isTrue(row?.blocked) ? countMerged(db, range) : Number(row?.count ?? 0);
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
        .select((eb) => eb.exists(blocksQuery(db, range, v)).as('blocked'))
        .orderBy(column, order)
        .orderBy('event_id', order)
        .limit(sql.lit(limit))
        .offset(sql.lit(offset)),
  )) as (StoredEvent & { total: number | string; blocked: unknown })[];
  // When no block holds events of the range (as the statement saw them), the rows were all of them; a
  // page with no row to say so asks again after it.
  if (rows.length > 0 ? isTrue(rows[0]?.blocked) : await anyBlock(db, countedBlocks(range))) {
    const total = await countMerged(db, range);
    const read = await readMerged(db, range, order, undefined, offset, limit, new BlockCache());
    return { total, events: read.events.map((e) => ({ timestamp: e.timestamp, data: e.data })) };
  }
  const total = rows.length > 0 ? Number(rows[0]?.total) : await countEvents(db, range);
  return { total, events: rows.map((row) => ({ timestamp: row.timestamp, data: row.data })) };
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
      const position = v.afterAt === undefined ? undefined : { at: v.afterAt as number, id: v.afterId as number };
      const page = rangeQuery(db, range, v, position && beyondOf('timestamp', 'asc', position)).select([
        'timestamp',
        'event_id',
        'data',
      ]);
      const ordered = page.orderBy('timestamp', 'asc').orderBy('event_id', 'asc').limit(sql.lit(size));
      const columns = ['page.timestamp', 'page.event_id', 'page.data'];
      return db
        .selectFrom(ordered.as('page'))
        .select(jsonRowsText(engine, columns, ['page.timestamp', 'page.event_id']).as('rows'));
    })) as { rows: string | null }[];
    // Read as rows first: when no block holds events of the range after that, the rows were all of them.
    if (await anyBlock(db, range, after)) {
      yield* mergedChunks(db, range, size, after);
      return;
    }
    if (!row?.rows) return;
    // Read at once on SQLite: other work gets its turn between chunks.
    await giveWay();
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
  if (row) return hasExpired(timestamp, row.retention_days, now) ? undefined : row.data;
  const blocks = await db
    .selectFrom('event_blocks as b')
    .innerJoin('things as t', 't.thing_id', 'b.thing_id')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .innerJoin('organisations as o', 'o.organisation_key', 't.organisation_key')
    .select(['b.block_id', 'b.min_timestamp', 'b.max_timestamp', 'b.min_created_at', 'b.max_created_at'])
    .select(['b.event_count', 'b.body'])
    .select((eb) => eb.fn.coalesce('tt.retention_days', 'o.retention_days').as('retention_days'))
    .where('t.organisation_key', '=', organisationKey)
    .where('t.thing_key', '=', thingKey)
    .where('b.min_timestamp', '<=', timestamp)
    .where('b.min_timestamp', '>', timestamp - BLOCK_SPAN_MS)
    .where('b.max_timestamp', '>=', timestamp)
    .orderBy('b.min_timestamp')
    .execute();
  const cache = new BlockCache();
  for (const block of blocks) {
    if (hasExpired(timestamp, block.retention_days, now)) return undefined;
    const found = cache.events(blockOf(block)).find((e) => e.timestamp === timestamp);
    if (found) return found.data;
  }
  return undefined;
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

/*
 * Reads over rows and blocks (docs/storage.md, "The compact event store"). A thing's events are rows
 * until they are compacted into blocks; a late event may be a row within a block's time. The readers
 * above read rows alone while the range has no block (the common case for recent data), and these
 * merge both otherwise.
 *
 * A merged read goes step by step from the last event it answered (by time or receipt time, then id):
 * each step reads the next rows, then the next blocks, and answers what both say of the events up to
 * where either stops. A compaction between the two reads moves rows into a block: the step then sees
 * them twice, and answers them once (by id). Events only ever move from rows into blocks, so nothing
 * is missed in between, and a step starts from the events as they are then.
 */

/**
 * The blocks a count of the range depends on: those of the range, and for a whole history under
 * retention (counted as the thing's event count less its expired events) the expired ones too.
 */
const countedBlocks = (range: EventRange): EventRange =>
  range.from === undefined && range.to === undefined ? { ...range, notBefore: undefined } : range;

/** The blocks a count of the range depends on, for a statement of the query cache (values `v`). */
function blocksQuery(db: Executor, range: EventRange, v: Record<string, unknown>) {
  const blocks: EventRange = {
    thingId: v.thing as number,
    from: v.from as number | undefined,
    to: v.to as number | undefined,
    byCreatedAt: range.byCreatedAt,
    notBefore: v.notBefore as number | undefined,
  };
  return overlapping(db.selectFrom('event_blocks').select('block_id'), countedBlocks(blocks)).limit(sql.lit(1));
}

/** An SQL truth value as the engines answer it: a boolean on PostgreSQL, 0 or 1 on SQLite. */
const isTrue = (value: unknown) => value === true || Number(value) === 1;

/** Whether any block holds events of the range (after an event, for a read going on from it). */
async function anyBlock(db: Executor, range: EventRange, after?: EventTriple): Promise<boolean> {
  let query = overlapping(db.selectFrom('event_blocks').select('block_id'), range);
  if (after) query = query.where('max_timestamp', '>=', after[0]);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}

/**
 * The range's count over rows and blocks, in one statement (so a compaction cannot make it see events
 * twice or not at all): rows counted, blocks wholly in the range by their counts, and the few at its
 * ends opened. A thing's whole history is its `event_count`.
 */
async function countMerged(db: Executor, range: EventRange): Promise<number> {
  if (range.from === undefined && range.to === undefined) {
    if (range.notBefore === undefined) {
      const thing = await thingTotal(db, range.thingId).executeTakeFirst();
      return Number(thing?.event_count ?? 0);
    }
    const expired: EventRange = {
      thingId: range.thingId,
      from: undefined,
      to: range.notBefore - 1,
      byCreatedAt: false,
    };
    const counted = await countStatement(db, expired, thingTotal(db, range.thingId));
    return counted.total - counted.count;
  }
  return (await countStatement(db, range)).count;
}

async function countStatement(
  db: Executor,
  range: EventRange,
  totalQuery?: ReturnType<typeof thingTotal>,
): Promise<{ count: number; total: number }> {
  const v = rangeValues(range);
  const rows = rangeQuery(db, range, v).select((eb) => eb.fn.countAll().as('n'));
  const whole = overlapping(db.selectFrom('event_blocks'), range)
    .where((eb) => insideOf(eb, range))
    .select(sql<number>`coalesce(sum(event_count), 0)`.as('m'));
  const ends = overlapping(db.selectFrom('event_blocks'), range)
    .where((eb) => eb.not(insideOf(eb, range)))
    .select([sql<number | null>`null`.as('n'), sql<number | null>`null`.as('m'), sql<number | null>`null`.as('t')])
    .select('body');
  const counts = db
    .selectNoFrom([
      rows.as('n'),
      whole.as('m'),
      (totalQuery ?? sql<number | null>`null`).as('t'),
      sql<Uint8Array | null>`null`.as('body'),
    ])
    .unionAll(ends);
  const result = (await counts.execute()) as { n: unknown; m: unknown; t: unknown; body: Uint8Array | null }[];
  let count = 0;
  let total = 0;
  for (const row of result) {
    if (row.body === null) {
      count += Number(row.n) + Number(row.m);
      total = Number(row.t);
    } else {
      for (const e of decodeBlock(row.body)) if (eventInside(e, range)) count++;
    }
  }
  return { count, total };
}

const thingTotal = (db: Executor, thingId: number) =>
  db.selectFrom('things').select('event_count').where('thing_id', '=', thingId);

/** Where a merged read is: after the event of this (time or receipt time, id). */
interface Position {
  at: number;
  id: number;
}

/** A merged read's answer, and where it ended (undefined when it reached the end of the range). */
interface MergedRead {
  events: BlockEvent[];
  next: Position | undefined;
}

/** Rows read per step at most, and blocks listed per step at first (more while a step needs them). */
const STEP_ROWS = 2000;
const STEP_BLOCKS = 4;

/**
 * `limit` events of the range in order, after skipping `skip` of them, from `after` on. Blocks that
 * nothing else interleaves with, wholly in the range, are skipped by their count without opening
 * them, so a deep page opens only the blocks it answers from.
 */
async function readMerged(
  db: Executor,
  range: EventRange,
  order: 'asc' | 'desc',
  after: Position | undefined,
  skip: number,
  limit: number,
  cache: BlockCache,
): Promise<MergedRead> {
  const events: BlockEvent[] = [];
  let position = after;
  let toSkip = skip;
  let blocks = STEP_BLOCKS;
  for (let steps = 0; events.length < limit; steps++) {
    // Other work gets its turn between steps (each reads and decodes at once on SQLite).
    if (steps > 0) await giveWay();
    const step = await mergedStep(db, range, order, position, toSkip, limit - events.length, blocks, cache);
    events.push(...step.events);
    toSkip -= step.skipped;
    const moved = step.events.length > 0 || step.skipped > 0;
    if (step.done) return { events, next: undefined };
    // A step that could not go on (blocks beginning together beyond its list) lists more.
    blocks = moved ? Math.min(Math.max(blocks, step.blocksOpened * 2), 64) : blocks * 2;
    position = step.next;
  }
  return { events, next: position };
}

interface Step {
  events: BlockEvent[];
  skipped: number;
  next: Position | undefined;
  done: boolean;
  blocksOpened: number;
}

async function mergedStep(
  db: Executor,
  range: EventRange,
  order: 'asc' | 'desc',
  after: Position | undefined,
  skip: number,
  limit: number,
  blockLimit: number,
  cache: BlockCache,
): Promise<Step> {
  const sign = order === 'asc' ? 1 : -1;
  const timeOf = (e: BlockEvent) => sign * (range.byCreatedAt ? e.createdAt : e.timestamp);
  const rowLimit = Math.min(Math.max(skip + limit, 100), STEP_ROWS);
  const rows = await rowsAfter(db, range, order, after, rowLimit);
  const blocks = await blocksAfter(db, range, order, after, blockLimit);
  const rowsDone = rows.length < rowLimit;
  const blocksDone = blocks.length < blockLimit;
  const lastRow = rows[rows.length - 1];
  // In the order read (sign applied): where a block's events begin and end.
  const firstOf = (b: BlockInfo) =>
    order === 'asc'
      ? range.byCreatedAt
        ? b.minCreatedAt
        : b.minTimestamp
      : -(range.byCreatedAt ? b.maxCreatedAt : b.maxTimestamp);
  const lastOf = (b: BlockInfo) =>
    order === 'asc'
      ? range.byCreatedAt
        ? b.maxCreatedAt
        : b.maxTimestamp
      : -(range.byCreatedAt ? b.minCreatedAt : b.minTimestamp);
  // Blocks not listed begin at or after the last one listed: events before it are all known.
  const blockHorizon = blocksDone ? Number.POSITIVE_INFINITY : firstOf(blocks[blocks.length - 1] as BlockInfo);
  const before = (a: BlockEvent, b: BlockEvent) => timeOf(a) - timeOf(b) || sign * (a.eventId - b.eventId);
  const afterPosition = (e: BlockEvent) =>
    after === undefined ||
    sign * ((range.byCreatedAt ? e.createdAt : e.timestamp) - after.at) > 0 ||
    ((range.byCreatedAt ? e.createdAt : e.timestamp) === after.at && sign * (e.eventId - after.id) > 0);
  const rowIds = new Set(rows.map((r) => r.eventId));
  let r = 0;
  let b = 0;
  let held: BlockEvent[] = [];
  let h = 0;
  let skipped = 0;
  let opened = 0;
  let next = after;
  const events: BlockEvent[] = [];
  while (events.length < limit) {
    const row = rows[r];
    const open = held[h];
    const head = row && (!open || before(row, open) <= 0) ? row : open;
    const block = blocks[b];
    if (block && (head === undefined || firstOf(block) <= timeOf(head))) {
      const following = blocks[b + 1];
      const clear =
        lastOf(block) < (row ? timeOf(row) : rowsDone ? Number.POSITIVE_INFINITY : timeOf(lastRow as BlockEvent)) &&
        (open === undefined || lastOf(block) < timeOf(open)) &&
        lastOf(block) < (following ? firstOf(following) : blockHorizon);
      // Wholly after where the read is (a block it is part way through counts only in part).
      const unread = after === undefined || firstOf(block) > sign * after.at;
      if (clear && unread && skip - skipped >= block.count && blockInside(block, range)) {
        skipped += block.count;
        // Past every event of the block, and of no other.
        const end = sign * lastOf(block);
        next = { at: end, id: order === 'asc' ? Number.MAX_SAFE_INTEGER : -1 };
      } else {
        opened++;
        const fresh = cache
          .events(block)
          .filter((e) => eventInside(e, range) && afterPosition(e) && !rowIds.has(e.eventId));
        held = [...held.slice(h), ...fresh].sort(before);
        h = 0;
      }
      b++;
      continue;
    }
    if (head === undefined) break;
    // Beyond the rows read, or where a block not listed may begin: for the next step.
    if (!rowsDone && lastRow && before(lastRow, head) < 0) break;
    if (b >= blocks.length && !blocksDone && timeOf(head) >= blockHorizon) break;
    if (head === row) r++;
    else h++;
    if (skipped < skip) skipped++;
    else events.push(head);
    next = { at: range.byCreatedAt ? head.createdAt : head.timestamp, id: head.eventId };
  }
  const done = r >= rows.length && rowsDone && b >= blocks.length && blocksDone && h >= held.length;
  return { events, skipped, next, done, blocksOpened: opened };
}

/** The range's next rows after a position, in order. */
async function rowsAfter(
  db: Executor,
  range: EventRange,
  order: 'asc' | 'desc',
  after: Position | undefined,
  limit: number,
): Promise<BlockEvent[]> {
  const column = range.byCreatedAt ? 'created_at' : 'timestamp';
  const query = rangeQuery(db, range, rangeValues(range), after && beyondOf(column, order, after)).select([
    'event_id',
    'timestamp',
    'created_at',
    'data',
    'waypoint',
  ]);
  const rows = await query.orderBy(column, order).orderBy('event_id', order).limit(limit).execute();
  return rows.map((row) => ({
    eventId: Number(row.event_id),
    timestamp: Number(row.timestamp),
    createdAt: Number(row.created_at),
    data: row.data,
    waypoint: row.waypoint,
  }));
}

/** The range's next blocks that may hold events after a position, with their bodies, in the order they begin. */
async function blocksAfter(
  db: Executor,
  range: EventRange,
  order: 'asc' | 'desc',
  after: Position | undefined,
  limit: number,
): Promise<BlockInfo[]> {
  const [first, last] = range.byCreatedAt
    ? (['min_created_at', 'max_created_at'] as const)
    : (['min_timestamp', 'max_timestamp'] as const);
  let query = db.selectFrom('event_blocks').select([...BLOCK_COLUMNS, 'body']);
  // A block's event times lie within an hour (BLOCK_SPAN_MS): bounded on the side the list is ordered
  // by too, the list is a range of that index from the position, which stops after `limit` blocks,
  // rather than every block after the position sorted (docs/storage.md, "Reading from a position").
  // Ahead of the range's own bounds, which SQLite would otherwise start the index's range at.
  if (after && !range.byCreatedAt) {
    query =
      order === 'asc'
        ? query.where('min_timestamp', '>', after.at - BLOCK_SPAN_MS)
        : query.where('max_timestamp', '<', after.at + BLOCK_SPAN_MS);
  }
  if (after) query = order === 'asc' ? query.where(last, '>=', after.at) : query.where(first, '<=', after.at);
  query = overlapping(query, range);
  const ordered =
    order === 'asc'
      ? query.orderBy(first, 'asc').orderBy('block_id', 'asc')
      : query.orderBy(last, 'desc').orderBy('block_id', 'desc');
  return (await ordered.limit(limit).execute()).map(blockOf);
}

/** The range's events in time order from `after` on, in chunks, over rows and blocks. */
async function* mergedChunks(
  db: Executor,
  range: EventRange,
  size: number,
  after: EventTriple | undefined,
): AsyncGenerator<EventTriple[]> {
  const cache = new BlockCache();
  let position: Position | undefined = after && { at: after[0], id: after[1] };
  for (;;) {
    const read = await readMerged(db, { ...range, byCreatedAt: false }, 'asc', position, 0, size, cache);
    await giveWay();
    if (read.events.length > 0) {
      yield read.events.map((e) => [e.timestamp, e.eventId, JSON.parse(e.data)] as EventTriple);
    }
    if (read.next === undefined || read.events.length < size) return;
    position = read.next;
  }
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
  // Blocks first, oldest first. A block wholly expired goes whole, however many events it holds: it is
  // one row, as quick to delete as one event's. The one across the cut is rewritten once without all
  // its expired events (decoding and encoding it is what costs, so not a few events at a time). So
  // the answer may be more than `limit`; at `limit` or more, more may be left.
  let removed = 0;
  while (removed < limit) {
    const row = await tx
      .selectFrom('event_blocks')
      .select(BLOCK_COLUMNS)
      .where('thing_id', '=', thingId)
      .where('min_timestamp', '<', before)
      .orderBy('min_timestamp')
      .orderBy('block_id')
      .limit(1)
      .executeTakeFirst();
    if (!row) break;
    const block = blockOf(row);
    if (block.maxTimestamp < before) {
      if (await deleteBlock(tx, block)) removed += block.count;
    } else {
      removed += await rewriteBlock(tx, thingId, block, (e) => e.timestamp >= before);
    }
  }
  if (removed >= limit) return removed;
  return removed + (await deleteRowsBefore(tx, thingId, before, limit - removed));
}

async function deleteRowsBefore(tx: Tx, thingId: number, before: number, limit: number): Promise<number> {
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
  let removed = Number(result.numDeletedRows);
  // Then the blocks (after the rows: a compaction of rows in the range that commits meanwhile has
  // written its block by then). Whole blocks in the range go, the ones across its ends are rewritten.
  const range: EventRange = { thingId, from, to, byCreatedAt: false };
  const whole = await tx
    .deleteFrom('event_blocks')
    .where((eb) => eb.and([overlapsOf(eb, range), insideOf(eb, range)]))
    .returning('event_count')
    .execute();
  for (const row of whole) removed += Number(row.event_count);
  const ends = await overlapping(tx.selectFrom('event_blocks').select(BLOCK_COLUMNS), range).execute();
  for (const row of ends) {
    removed += await rewriteBlock(tx, thingId, blockOf(row), (e) => e.timestamp < from || e.timestamp > to);
  }
  return removed;
}

/** A thing's newest stored event by its own time (its data as JSON text), or undefined. */
export async function newestEvent(db: Executor, thingId: number): Promise<StoredEvent | undefined> {
  const range: EventRange = { thingId, from: undefined, to: undefined, byCreatedAt: false };
  if (await anyBlock(db, range)) {
    const [newest] = (await readMerged(db, range, 'desc', undefined, 0, 1, new BlockCache())).events;
    return newest && { timestamp: newest.timestamp, data: newest.data };
  }
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

/* Compaction (events/compactor.ts): a thing's oldest rows into a block. */

const HOUR_MS = 3_600_000;

/** Events a block holds at most. */
export const BLOCK_EVENTS = 4096;

/**
 * A thing's oldest rows of event time before `before`, for one block: those of the hour of the oldest
 * one (UTC), at most BLOCK_EVENTS, in (time, id) order; none when it has no row that old.
 */
export async function oldestRows(db: Executor, thingId: number, before: number): Promise<BlockEvent[]> {
  const oldest = await db
    .selectFrom('events')
    .select('timestamp')
    .where('thing_id', '=', thingId)
    .where('timestamp', '<', before)
    .orderBy('timestamp')
    .limit(1)
    .executeTakeFirst();
  if (!oldest) return [];
  const start = Number(oldest.timestamp);
  const end = Math.min(before, Math.floor(start / HOUR_MS) * HOUR_MS + HOUR_MS);
  const rows = await db
    .selectFrom('events')
    .select(['event_id', 'timestamp', 'created_at', 'data', 'waypoint'])
    .where('thing_id', '=', thingId)
    .where('timestamp', '>=', start)
    .where('timestamp', '<', end)
    .orderBy('timestamp')
    .orderBy('event_id')
    .limit(BLOCK_EVENTS)
    .execute();
  return rows.map((row) => ({
    eventId: Number(row.event_id),
    timestamp: Number(row.timestamp),
    createdAt: Number(row.created_at),
    data: row.data,
    waypoint: row.waypoint,
  }));
}

/** The rows (events/compactor.ts) were deleted or compacted by someone else meanwhile: nothing was done. */
export class CompactionConflict extends Error {
  override readonly name = 'CompactionConflict';
}

const deleteRowsById = new RowsStatement(
  ['bigint'],
  () => 'delete from events where event_id in (select column1 from v) returning event_id',
);

/** A block made of a thing's rows (blockRow), ready to replace them. */
export type CompactedBlock = ReturnType<typeof blockRow>;

/**
 * In one transaction: deletes the rows a block was made of and writes the block, so the events are
 * rows or in the block, never both or neither. Throws CompactionConflict (the transaction must roll
 * back) when any of the rows is gone: another instance compacted them, or a delete took them.
 */
export async function replaceRowsByBlock(tx: Tx, events: readonly BlockEvent[], block: CompactedBlock): Promise<void> {
  const deleted = await deleteRowsById.run(tx, [events.map((e) => e.eventId)]);
  if (deleted.length !== events.length) throw new CompactionConflict('the rows changed while they were compacted');
  await insertBlock(tx, block);
}
