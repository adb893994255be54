import type { Kysely } from 'kysely';
import { autoIncrementType, engineOfDb } from '../dialect.ts';

/**
 * The compact event store (docs/storage.md): a thing's older events, compacted a block at a time
 * (at most an hour of event time) into one row whose body holds them column by column, deflated.
 * Each block carries the range of its events' times and receipt times and their number, so reads
 * and deletes pick blocks without opening them. Events stay rows until they are compacted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const engine = engineOfDb(db);
  await db.schema
    .createTable('event_blocks')
    .addColumn('block_id', autoIncrementType(engine), (c) =>
      c.primaryKey().$call((b) => (engine === 'sqlite' ? b.autoIncrement() : b)),
    )
    .addColumn('thing_id', 'bigint', (c) => c.notNull())
    .addColumn('min_timestamp', 'bigint', (c) => c.notNull())
    .addColumn('max_timestamp', 'bigint', (c) => c.notNull())
    .addColumn('min_created_at', 'bigint', (c) => c.notNull())
    .addColumn('max_created_at', 'bigint', (c) => c.notNull())
    .addColumn('event_count', 'integer', (c) => c.notNull())
    .addColumn('body', engine === 'sqlite' ? 'blob' : 'bytea', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('event_blocks_thing_min')
    .on('event_blocks')
    .columns(['thing_id', 'min_timestamp'])
    .execute();
  await db.schema
    .createIndex('event_blocks_thing_max')
    .on('event_blocks')
    .columns(['thing_id', 'max_timestamp'])
    .execute();
}
