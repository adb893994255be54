import { type Kysely, sql } from 'kysely';

/**
 * Rollups per thing template and 15-minute slot (docs/storage.md, "Template rollups"): the slot rollups
 * of every thing of a template merged into one row, so that a fleet's 30 days in 15-minute buckets read
 * one row per slot instead of one per thing and slot. Slots whose row may no longer be the merge of
 * its things' rows are listed in `template_rollup_repairs`, read thing by thing meanwhile, and counted
 * again by the sweeper.
 *
 * Every slot already rolled up is listed for repair here, so the sweeper builds the rows of the data
 * stored before this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('template_rollups')
    .addColumn('thing_template_key', 'text', (c) => c.notNull())
    // Start of the slot, epoch ms (a multiple of 15 minutes).
    .addColumn('slot', 'bigint', (c) => c.notNull())
    // JSON object: metric name to [count, sum, min, max], as event_rollups.stats.
    .addColumn('stats', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('template_rollups_pk', ['thing_template_key', 'slot'])
    .execute();
  await db.schema
    .createTable('template_rollup_repairs')
    .addColumn('thing_template_key', 'text', (c) => c.notNull())
    .addColumn('slot', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('template_rollup_repairs_pk', ['thing_template_key', 'slot'])
    .execute();
  await sql`insert into template_rollup_repairs (thing_template_key, slot)
    select distinct t.thing_template_key, r.slot from event_rollups r join things t on t.thing_id = r.thing_id`.execute(
    db,
  );
}
