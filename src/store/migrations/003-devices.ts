import type { Kysely } from 'kysely';
import { autoIncrementType, engineOfDb } from '../dialect.ts';

/** Key pairs for devices, events, and the server's own secrets. */
export async function up(db: Kysely<unknown>): Promise<void> {
  const engine = engineOfDb(db);

  await db.schema
    .createTable('key_pairs')
    .addColumn('key_pair_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('access_key', 'text', (c) => c.notNull().unique())
    // The secret key, encrypted with the server's key (core/secret-box.ts).
    .addColumn('secret_key_sealed', 'text', (c) => c.notNull())
    .addColumn('role_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('key_pairs_organisation_created')
    .on('key_pairs')
    .columns(['organisation_key', 'created_at', 'key_pair_key'])
    .execute();
  await db.schema.createIndex('key_pairs_role').on('key_pairs').column('role_key').execute();

  await db.schema
    .createTable('events')
    .addColumn('event_id', autoIncrementType(engine), (c) =>
      c.primaryKey().$call((b) => (engine === 'sqlite' ? b.autoIncrement() : b)),
    )
    .addColumn('thing_id', 'bigint', (c) => c.notNull())
    // When the event happened (device time, ms) and when the server received it (ms).
    .addColumn('timestamp', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('waypoint', 'text')
    .execute();
  await db.schema.createIndex('events_thing_timestamp').on('events').columns(['thing_id', 'timestamp']).execute();
  await db.schema.createIndex('events_thing_created').on('events').columns(['thing_id', 'created_at']).execute();

  // The device time of the thing's newest event, so late arrivals do not replace it as last_event.
  await db.schema.alterTable('things').addColumn('last_event_timestamp', 'bigint').execute();

  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}
