/** Reads of stored events for queries. */
import { sql } from 'kysely';
import { QueryCache } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';

export interface EventRange {
  thingId: number;
  from: number | undefined;
  to: number | undefined;
  /** Filter on the receipt time instead of the event time. */
  byCreatedAt: boolean;
}

export interface StoredEvent {
  timestamp: number;
  data: string;
}

const queries = new QueryCache();

function rangeValues(range: EventRange) {
  return { thing: range.thingId, from: range.from, to: range.to };
}

function rangeQuery(db: Executor, range: EventRange, v: Record<string, unknown>) {
  const column = range.byCreatedAt ? 'created_at' : 'timestamp';
  let query = db.selectFrom('events').where('thing_id', '=', v.thing as number);
  if (v.from !== undefined) query = query.where(column, '>=', v.from as number);
  if (v.to !== undefined) query = query.where(column, '<=', v.to as number);
  return query;
}

export async function countEvents(db: Executor, range: EventRange): Promise<number> {
  const [row] = await queries.execute(db, `count|${range.byCreatedAt}`, rangeValues(range), (v) =>
    rangeQuery(db, range, v).select((eb) => eb.fn.countAll().as('count')),
  );
  return Number((row as { count?: unknown } | undefined)?.count ?? 0);
}

export async function pageOfEvents(
  db: Executor,
  range: EventRange,
  order: 'asc' | 'desc',
  limit: number,
  offset: number,
): Promise<StoredEvent[]> {
  const column = range.byCreatedAt ? 'created_at' : 'timestamp';
  return (await queries.execute(db, `page|${range.byCreatedAt}|${order}|${limit}|${offset}`, rangeValues(range), (v) =>
    rangeQuery(db, range, v)
      .select(['timestamp', 'data'])
      .orderBy(column, order)
      .orderBy('event_id', order)
      .limit(sql.lit(limit))
      .offset(sql.lit(offset)),
  )) as StoredEvent[];
}

/** Every event of the range in time order, for aggregation. */
export async function eventsInRange(db: Executor, range: EventRange): Promise<StoredEvent[]> {
  return (await queries.execute(db, `all|${range.byCreatedAt}`, rangeValues(range), (v) =>
    rangeQuery(db, range, v).select(['timestamp', 'data']).orderBy('timestamp', 'asc').orderBy('event_id', 'asc'),
  )) as StoredEvent[];
}
