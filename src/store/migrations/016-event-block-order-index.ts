import { type Kysely, sql } from 'kysely';
import { engineOfDb } from '../dialect.ts';

/**
 * On PostgreSQL, the event blocks' (thing, first event time) and (thing, last event time) indexes take
 * the block id as a third column, so that they hold a thing's blocks in the order merged reads list
 * them (by first or last event time, then id), and a list from a position can stop after the few
 * blocks it asks for. With two columns, ordering by the id too needed a sort of every block of the
 * thing after the position, at every step of a read. SQLite's indexes already end with the row id,
 * which is the block id, so they are unchanged there (docs/storage.md, "Reading from a position").
 * Blocks are small (one row an hour per thing), so the indexes are built at once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (engineOfDb(db) !== 'postgres') return;
  await sql`create index event_blocks_thing_min_id on event_blocks (thing_id, min_timestamp, block_id)`.execute(db);
  await sql`drop index event_blocks_thing_min`.execute(db);
  await sql`create index event_blocks_thing_max_id on event_blocks (thing_id, max_timestamp, block_id)`.execute(db);
  await sql`drop index event_blocks_thing_max`.execute(db);
}
