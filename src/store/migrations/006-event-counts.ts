import { type Kysely, type QueryExecutorProvider, sql } from 'kysely';

/**
 * Each thing's number of stored events, kept by the event writer in the transaction that stores them
 * (events/writer.ts): `thing_data` without a range answers its total from it instead of counting the
 * thing's whole history on every page. The events already stored are counted once here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('things')
    .addColumn('event_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await countStoredEvents(db);
}

/** Sets every thing's event count from its stored events. */
export async function countStoredEvents(db: QueryExecutorProvider): Promise<void> {
  await sql`update things set event_count = (select count(*) from events where events.thing_id = things.thing_id)`.execute(
    db,
  );
}
