/**
 * The partitions of the event blocks on PostgreSQL (docs/storage.md, "Partitions"): `event_blocks`
 * is partitioned by range of its blocks' first event time, a calendar month (UTC) per partition
 * (migration 014). A partition is created when a block is first written into its month, and dropped
 * by the retention sweeper (events/sweeper.ts) once every block in it has expired. SQLite has one
 * table and none of this: every function here does nothing there.
 */
import { sql } from 'kysely';
import { DAY_MS } from '../core/retention.ts';
import type { Executor, Store, Tx } from '../store/store.ts';

/** A partition: its table's name and the range of first event times it holds, [from, to) in ms. */
export interface Partition {
  name: string;
  from: number;
  to: number;
}

/** The partition of the month (UTC) of a block's first event time. */
export function partitionOf(timestamp: number): Partition {
  const at = new Date(timestamp);
  const from = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
  const to = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
  return { name: `event_blocks_${new Date(from).toISOString().slice(0, 7).replace('-', '_')}`, from, to };
}

/**
 * How long a statement waits for the lock on the whole table that creating or dropping a partition
 * takes. Reads of blocks that begin meanwhile wait behind it, so it is short: when it runs out (a
 * long read under way), the work is left for the next time.
 */
const LOCK_TIMEOUT_MS = 500;

/** The partitions each store knows to exist, by their first time (so a block's write asks nothing). */
const known = new WeakMap<object, Set<number>>();

function knownOf(db: Executor): Set<number> {
  let set = known.get(db);
  if (!set) {
    set = new Set();
    known.set(db, set);
  }
  return set;
}

/** PostgreSQL's error code, if it is one of its errors. */
const codeOf = (error: unknown): string | undefined => (error as { code?: unknown })?.code as string | undefined;

/** The lock of a partition's creation or drop was not had in time (LOCK_TIMEOUT_MS). */
export const isLockTimeout = (error: unknown): boolean => codeOf(error) === '55P03';

/**
 * A block was written into a month without a partition: another instance's sweeper dropped it since
 * this one made sure of it. `forgetPartition` and `ensurePartition` again.
 */
export const isMissingPartition = (error: unknown): boolean =>
  codeOf(error) === '23514' && /no partition/.test((error as Error).message);

/** Forgets that a month's partition exists (it was dropped, here or by another instance). */
export function forgetPartition(db: Executor, timestamp: number): void {
  knownOf(db).delete(partitionOf(timestamp).from);
}

/**
 * Makes sure the partition of a block's time exists, before a transaction writes the block into it
 * (never inside one: creating it locks the whole table until its transaction ends). Instances may
 * create the same one at once: `if not exists` does not keep two creations that both found it missing
 * from colliding, so the loser's duplicate error means it is there. Answers false when the lock was
 * not had in time (the block is for later).
 */
export async function ensurePartition(store: Store, timestamp: number): Promise<boolean> {
  if (store.engine !== 'postgres') return true;
  const partition = partitionOf(timestamp);
  const set = knownOf(store.db);
  if (set.has(partition.from)) return true;
  try {
    await store.transaction(async (tx) => {
      await sql`set local lock_timeout = ${sql.lit(`${LOCK_TIMEOUT_MS}ms`)}`.execute(tx);
      await sql`create table if not exists ${sql.id(partition.name)} partition of event_blocks
        for values from (${sql.lit(partition.from)}) to (${sql.lit(partition.to)})`.execute(tx);
    });
  } catch (error) {
    // 42P07: the table exists; 23505: its type's name was taken by the concurrent creation.
    if (isLockTimeout(error)) return false;
    if (codeOf(error) !== '42P07' && codeOf(error) !== '23505') throw error;
  }
  set.add(partition.from);
  return true;
}

/** The partitions there are now, in time order. */
export async function partitions(db: Executor): Promise<Partition[]> {
  const { rows } = await sql<{ name: string; bound: string }>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'event_blocks'::regclass`.execute(db);
  const listed: Partition[] = [];
  for (const row of rows) {
    const bound = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(row.bound);
    if (bound) listed.push({ name: row.name, from: Number(bound[1]), to: Number(bound[2]) });
  }
  return listed.sort((a, b) => a.from - b.from);
}

/**
 * The blocks of a partition with their things' days of event retention (the template's, else the
 * organisation's; null: kept for ever). A block whose thing is gone has no row of it.
 */
const withRetention = (partition: Partition) => sql`${sql.id(partition.name)} b left join (
    select t.thing_id, t.last_event_timestamp, coalesce(tt.retention_days, o.retention_days) as days
    from things t
    join thing_templates tt on tt.thing_template_key = t.thing_template_key
    join organisations o on o.organisation_key = t.organisation_key
  ) r on r.thing_id = b.thing_id`;

/** Whether the block (`b`) of a thing (`r`) has expired at `now`: the thing keeps its events for a time that has passed its last event. */
const blockExpired = (now: number) =>
  sql`(r.thing_id is null or (r.days is not null and b.max_timestamp < ${now} - r.days::bigint * ${DAY_MS}))`;

/**
 * The partitions every block of which has expired at `now`, read without a lock (the drop reads
 * them again under it). Only those of months that ended a day or more ago can be: a day is the
 * shortest retention, so this also leaves alone a new partition made empty for a block about to be
 * written. A partition with a block of a thing that keeps its events for ever is never one of them.
 */
export async function expiredPartitions(db: Executor, now: number): Promise<Partition[]> {
  const expired: Partition[] = [];
  for (const partition of await partitions(db)) {
    if (partition.to > now - DAY_MS) continue;
    try {
      const { rows } = await sql<{ kept: boolean }>`
        select exists (select 1 from ${withRetention(partition)} where not ${blockExpired(now)}) as kept`.execute(db);
      if (rows[0]?.kept === false) expired.push(partition);
    } catch (error) {
      // 42P01: another instance dropped it since it was listed.
      if (codeOf(error) !== '42P01') throw error;
    }
  }
  return expired;
}

/** What dropping a partition removed. */
export interface DroppedPartition {
  /** Events removed, in all. */
  events: number;
  /** Events removed of each thing still there. */
  removed: Map<number, number>;
  /** The things whose newest event expired (their last event is to be set again). */
  lastEventExpired: number[];
}

/**
 * In its transaction: drops the partition if every block in it has expired at `now`, and answers what
 * it removed (undefined: nothing, it is kept or gone already). The whole table is locked first (for
 * at most LOCK_TIMEOUT_MS of waiting, else it throws, isLockTimeout), so no block is written into the
 * partition or deleted from it between the count of its blocks and its drop: the count the caller
 * lowers in the same transaction is exactly what the drop removed, and a crash before the commit
 * leaves the partition and the counts as they were. An instance that finds the partition already
 * dropped by another (it waited for its lock) does nothing.
 */
export async function dropExpiredPartition(
  tx: Tx,
  partition: Partition,
  now: number,
): Promise<DroppedPartition | undefined> {
  await sql`set local lock_timeout = ${sql.lit(`${LOCK_TIMEOUT_MS}ms`)}`.execute(tx);
  await sql`lock table only event_blocks in access exclusive mode`.execute(tx);
  const [present] = (
    await sql<{ present: boolean }>`select to_regclass(${partition.name}) is not null as present`.execute(tx)
  ).rows;
  if (!present?.present) return undefined;
  const { rows } = await sql<{
    thing_id: string;
    events: string;
    expired: boolean;
    last_expired: boolean | null;
    present: boolean;
  }>`
    select b.thing_id, sum(b.event_count) as events, bool_and(${blockExpired(now)}) as expired,
      bool_or(r.last_event_timestamp < ${now} - r.days::bigint * ${DAY_MS}) as last_expired,
      bool_or(r.thing_id is not null) as present
    from ${withRetention(partition)}
    group by b.thing_id`.execute(tx);
  if (rows.some((r) => !r.expired)) return undefined;
  await sql`alter table event_blocks detach partition ${sql.id(partition.name)}`.execute(tx);
  await sql`drop table ${sql.id(partition.name)}`.execute(tx);
  const dropped: DroppedPartition = { events: 0, removed: new Map(), lastEventExpired: [] };
  for (const row of rows) {
    dropped.events += Number(row.events);
    if (!row.present) continue;
    dropped.removed.set(Number(row.thing_id), Number(row.events));
    if (row.last_expired) dropped.lastEventExpired.push(Number(row.thing_id));
  }
  return dropped;
}
