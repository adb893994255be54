import { type Kysely, type QueryExecutorProvider, sql } from 'kysely';

/**
 * Reads by receipt time (`query_by_created_at`) go through the events' (thing, event time) index,
 * within the bounds each thing's arrival lag allows (events/repository.ts), instead of a second
 * per-thing index on the receipt time: every stored event added an entry to that index and each
 * transaction rewrote one of its pages per thing, a third of what storing a bulk cost. A thing's lag
 * bounds are the smallest and largest receipt time minus event time (ms) of its stored events, kept
 * by the event writer in the transaction that stores them; the events already stored are measured
 * once here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('things').addColumn('arrival_lag_min', 'bigint').execute();
  await db.schema.alterTable('things').addColumn('arrival_lag_max', 'bigint').execute();
  await measureArrivalLags(db);
  await db.schema.dropIndex('events_thing_created').execute();
}

/** Sets every thing's arrival lag bounds from its stored events (null for a thing without events). */
export async function measureArrivalLags(db: QueryExecutorProvider): Promise<void> {
  // One pass over each thing's events for both bounds.
  await sql`update things set (arrival_lag_min, arrival_lag_max) = (select min(created_at - timestamp),
      max(created_at - timestamp) from events where events.thing_id = things.thing_id)`.execute(db);
}
