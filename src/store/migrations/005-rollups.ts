import type { Kysely } from 'kysely';
import { rebuildRollups } from '../../events/rollups.ts';
import type { Database } from '../tables.ts';

/** Per-thing 15-minute rollups of event metrics (events/rollups.ts), counted for the events already stored. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_rollups')
    .addColumn('thing_id', 'bigint', (c) => c.notNull())
    .addColumn('slot', 'bigint', (c) => c.notNull())
    .addColumn('stats', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_rollups_pk', ['thing_id', 'slot'])
    .execute();
  await rebuildRollups(db as Kysely<Database>);
}
