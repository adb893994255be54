import type { Kysely } from 'kysely';

/**
 * What organisations use (docs/api.md, "Rate limits and usage"): the user API requests of each
 * one-minute window, shared by every instance for the rate limit, and the events stored each UTC day,
 * kept by the event writer in the transaction that stores them. Counting starts with this version.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('api_request_windows')
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    // Start of the window, epoch ms (a multiple of 60,000).
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('requests', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('api_request_windows_pk', ['organisation_key', 'window_start'])
    .execute();
  await db.schema
    .createTable('event_days')
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    // Start of the UTC day, epoch ms.
    .addColumn('day_start', 'bigint', (c) => c.notNull())
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_days_pk', ['organisation_key', 'day_start'])
    .execute();
}
