/**
 * The event blocks table (docs/storage.md, "The compact event store"): a thing's older events compacted
 * a block at a time. What a block holds is encoded by events/block-codec.ts; which events are in
 * blocks and which are still rows is for events/repository.ts, the only module that reads both.
 */
import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { Executor } from '../store/store.ts';
import type { Database } from '../store/tables.ts';
import { type BlockEvent, decodeBlock, encodeBlock } from './block-codec.ts';

/** A block as listed: its ranges and count, and its body when read. */
export interface BlockInfo {
  blockId: number;
  minTimestamp: number;
  maxTimestamp: number;
  minCreatedAt: number;
  maxCreatedAt: number;
  count: number;
  body?: Uint8Array;
}

/** What a block is picked by: a thing's events by event time or receipt time, and an expiry time. */
export interface BlockRange {
  thingId: number;
  from: number | undefined;
  to: number | undefined;
  byCreatedAt: boolean;
  notBefore?: number | undefined;
}

type BlocksQuery<O> = SelectQueryBuilder<Database, 'event_blocks', O>;

/**
 * A block's events lie within one hour of event time (UTC; events/repository.ts, `oldestRows`), and a
 * block rewritten without some of them too: one whose last event is at or after a time began less
 * than an hour before it.
 */
export const BLOCK_SPAN_MS = 3_600_000;

/** The blocks holding at least one event time or receipt time of the range (they may hold others too). */
export function overlapping<O>(query: BlocksQuery<O>, range: BlockRange): BlocksQuery<O> {
  return query.where((eb) => overlapsOf(eb, range));
}

/**
 * Whether a block holds at least one event time or receipt time of the range (as an SQL condition).
 * A lower bound on the last event time bounds the first one too (BLOCK_SPAN_MS), which PostgreSQL
 * needs to leave out the partitions of earlier months (docs/storage.md, "Partitions").
 */
export function overlapsOf(eb: ExpressionBuilder<Database, 'event_blocks'>, range: BlockRange) {
  const conditions = [eb('thing_id', '=', range.thingId)];
  // In SQL, not computed here: the statements of a query cache (store/prepared.ts) are built with
  // placeholders for the values.
  const since = (at: number) => [
    eb('max_timestamp', '>=', at),
    eb('min_timestamp', '>', sql<number>`cast(${at} as bigint) - ${sql.lit(BLOCK_SPAN_MS)}`),
  ];
  if (range.notBefore !== undefined) conditions.push(...since(range.notBefore));
  if (range.byCreatedAt) {
    if (range.from !== undefined) conditions.push(eb('max_created_at', '>=', range.from));
    if (range.to !== undefined) conditions.push(eb('min_created_at', '<=', range.to));
  } else {
    if (range.from !== undefined) conditions.push(...since(range.from));
    if (range.to !== undefined) conditions.push(eb('min_timestamp', '<=', range.to));
  }
  return eb.and(conditions);
}

/** Whether every event of the block is in the range (as an SQL condition). */
export function insideOf(eb: ExpressionBuilder<Database, 'event_blocks'>, range: BlockRange) {
  const conditions = [];
  if (range.notBefore !== undefined) conditions.push(eb('min_timestamp', '>=', range.notBefore));
  const [low, high] = range.byCreatedAt
    ? (['min_created_at', 'max_created_at'] as const)
    : (['min_timestamp', 'max_timestamp'] as const);
  if (range.from !== undefined) conditions.push(eb(low, '>=', range.from));
  if (range.to !== undefined) conditions.push(eb(high, '<=', range.to));
  return eb.and(conditions);
}

/** Whether every event of a listed block is in the range. */
export function blockInside(block: BlockInfo, range: BlockRange): boolean {
  const [low, high] = range.byCreatedAt
    ? [block.minCreatedAt, block.maxCreatedAt]
    : [block.minTimestamp, block.maxTimestamp];
  return (
    (range.notBefore === undefined || block.minTimestamp >= range.notBefore) &&
    (range.from === undefined || low >= range.from) &&
    (range.to === undefined || high <= range.to)
  );
}

/** Whether an event is in the range. */
export function eventInside(event: BlockEvent, range: BlockRange): boolean {
  const at = range.byCreatedAt ? event.createdAt : event.timestamp;
  return (
    (range.notBefore === undefined || event.timestamp >= range.notBefore) &&
    (range.from === undefined || at >= range.from) &&
    (range.to === undefined || at <= range.to)
  );
}

export const BLOCK_COLUMNS = [
  'block_id',
  'min_timestamp',
  'max_timestamp',
  'min_created_at',
  'max_created_at',
  'event_count',
] as const;

export function blockOf(row: {
  block_id: number | string;
  min_timestamp: number | string;
  max_timestamp: number | string;
  min_created_at: number | string;
  max_created_at: number | string;
  event_count: number | string;
  body?: Uint8Array;
}): BlockInfo {
  return {
    blockId: Number(row.block_id),
    minTimestamp: Number(row.min_timestamp),
    maxTimestamp: Number(row.max_timestamp),
    minCreatedAt: Number(row.min_created_at),
    maxCreatedAt: Number(row.max_created_at),
    count: Number(row.event_count),
    ...(row.body ? { body: row.body } : {}),
  };
}

/**
 * Recently decoded blocks by id. A block is never changed once written (a delete that keeps some of
 * its events writes a new block), so its id names its events for good.
 */
export class BlockCache {
  private readonly decoded = new Map<number, BlockEvent[]>();

  constructor(private readonly size = 4) {}

  events(block: BlockInfo): BlockEvent[] {
    let events = this.decoded.get(block.blockId);
    if (!events) {
      events = decodeBlock(block.body as Uint8Array);
      this.decoded.set(block.blockId, events);
      if (this.decoded.size > this.size) this.decoded.delete(this.decoded.keys().next().value as number);
    }
    return events;
  }
}

/** A block's row for a thing's events (sorted by event time, then id): its ranges, count and body. */
export function blockRow(thingId: number, events: readonly BlockEvent[]) {
  let minCreated = Number.POSITIVE_INFINITY;
  let maxCreated = Number.NEGATIVE_INFINITY;
  for (const e of events) {
    if (e.createdAt < minCreated) minCreated = e.createdAt;
    if (e.createdAt > maxCreated) maxCreated = e.createdAt;
  }
  return {
    thing_id: thingId,
    min_timestamp: (events[0] as BlockEvent).timestamp,
    max_timestamp: (events[events.length - 1] as BlockEvent).timestamp,
    min_created_at: minCreated,
    max_created_at: maxCreated,
    event_count: events.length,
    body: encodeBlock(events),
  };
}

/**
 * Writes a block. On PostgreSQL the partition of its time must exist (events/partitions.ts,
 * `ensurePartition`): the compactor makes sure of it before its transaction, and a block rewritten
 * without some of its events stays in its hour, so in the partition the block it replaces was in.
 */
export async function insertBlock(db: Executor, row: ReturnType<typeof blockRow>): Promise<void> {
  await db.insertInto('event_blocks').values(row).execute();
}

/** What names a block: its id, and its first event time, which picks its partition on PostgreSQL. */
type BlockKey = Pick<BlockInfo, 'blockId' | 'minTimestamp'>;

/** Deletes a block; answers whether it was still there (another instance may have deleted it). */
export async function deleteBlock(db: Executor, block: BlockKey): Promise<boolean> {
  const result = await db
    .deleteFrom('event_blocks')
    .where('block_id', '=', block.blockId)
    .where('min_timestamp', '=', block.minTimestamp)
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** A block with its body, if it is still there. */
export async function readBlock(db: Executor, block: BlockKey): Promise<BlockInfo | undefined> {
  const row = await db
    .selectFrom('event_blocks')
    .select([...BLOCK_COLUMNS, 'body'])
    .where('block_id', '=', block.blockId)
    .where('min_timestamp', '=', block.minTimestamp)
    .executeTakeFirst();
  return row && blockOf(row);
}

/**
 * Replaces a block by one of the events it holds that `keep` keeps (none: it is deleted), for deletes
 * that take some of its events; answers how many it removed (0 when another instance removed the
 * block first).
 */
export async function rewriteBlock(
  db: Executor,
  thingId: number,
  block: BlockInfo,
  /** Given each event and its place in the block (in (time, id) order). */
  keep: (event: BlockEvent, index: number) => boolean,
): Promise<number> {
  const read = block.body ? block : await readBlock(db, block);
  if (!read || !(await deleteBlock(db, block))) return 0;
  const kept = decodeBlock(read.body as Uint8Array).filter(keep);
  if (kept.length > 0) await insertBlock(db, blockRow(thingId, kept));
  return read.count - kept.length;
}
