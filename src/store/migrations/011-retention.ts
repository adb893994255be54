import type { Kysely } from 'kysely';

/**
 * Retention (docs/storage.md): how many days an organisation keeps its events and its 15-minute
 * rollups, and how many a template keeps its things' events (null: the organisation's). Null
 * everywhere keeps everything, as before. An index on the events' time is not needed: the sweeper
 * deletes each thing's oldest events through the (thing, time) index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('organisations').addColumn('retention_days', 'integer').execute();
  await db.schema.alterTable('organisations').addColumn('rollup_retention_days', 'integer').execute();
  await db.schema.alterTable('thing_templates').addColumn('retention_days', 'integer').execute();
}
