import { type Kysely, sql } from 'kysely';
import { engineOfDb } from '../dialect.ts';

/**
 * On PostgreSQL, the events' (thing, event time) index takes the event id as a third column, so that it
 * holds events in the order every read answers them (event time, then id: their order of arrival), and
 * a read of a thing's newest or oldest events can stop after the page it answers. With only (thing,
 * time), ordering by time and id needs a sort, and when the statistics underestimate a thing's events
 * (a thing far busier than the table was when last analysed) the planner fetched all of them and
 * sorted them to answer 100. SQLite's index already ends with the row id, which is the event id, so
 * it is unchanged there (docs/storage.md, "Indexes").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (engineOfDb(db) !== 'postgres') return;
  await sql`create index events_thing_time_id on events (thing_id, timestamp, event_id)`.execute(db);
  await sql`drop index events_thing_timestamp`.execute(db);
}
