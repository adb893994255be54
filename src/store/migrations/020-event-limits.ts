import type { Kysely } from 'kysely';

/**
 * Limits of events (docs/operations.md, "Admission of events"): an organisation's events a second,
 * set by its parent (null: the server's EVENTS_PER_SECOND_PER_ORGANISATION), and the events refused
 * past a limit each UTC day, for GET /api/v3/usage.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('organisations').addColumn('events_per_second', 'integer').execute();
  await db.schema
    .createTable('event_limit_days')
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    // Start of the UTC day, epoch ms.
    .addColumn('day_start', 'bigint', (c) => c.notNull())
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_limit_days_pk', ['organisation_key', 'day_start'])
    .execute();
}
