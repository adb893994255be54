import type { Kysely } from 'kysely';

/**
 * The events stored each minute per organisation, by receipt (docs/api.md, "Fleet summary"): kept by
 * the event writer in the transaction that stores them, for the last two hours only, so that the events
 * received per minute over the last hour cost 60 rows to read however busy the fleet is.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_minutes')
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    // Start of the minute, epoch ms (a multiple of 60,000).
    .addColumn('minute_start', 'bigint', (c) => c.notNull())
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_minutes_pk', ['organisation_key', 'minute_start'])
    .execute();
}
