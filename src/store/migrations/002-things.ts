import type { Kysely } from 'kysely';
import { newKey } from '../../core/keys.ts';
import { autoIncrementType, engineOfDb } from '../dialect.ts';

/** Thing templates, things, groups (and their static members) and gateways. */
export async function up(db: Kysely<unknown>): Promise<void> {
  const engine = engineOfDb(db);

  await db.schema
    .createTable('thing_templates')
    .addColumn('thing_template_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('metrics', 'text', (c) => c.notNull())
    .addColumn('heartbeat_interval', 'integer', (c) => c.notNull())
    .addColumn('idle_timeout', 'integer', (c) => c.notNull())
    .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('thing_templates_organisation_name', ['organisation_key', 'name'])
    .execute();
  await db.schema
    .createIndex('thing_templates_organisation_created')
    .on('thing_templates')
    .columns(['organisation_key', 'created_at', 'thing_template_key'])
    .execute();

  await db.schema
    .createTable('things')
    // A compact internal id: events refer to their thing by it.
    .addColumn('thing_id', autoIncrementType(engine), (c) =>
      c.primaryKey().$call((b) => (engine === 'sqlite' ? b.autoIncrement() : b)),
    )
    .addColumn('thing_key', 'text', (c) => c.notNull().unique())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('thing_template_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('coordinates', 'text')
    .addColumn('bi_directional', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('user_defined_properties', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('last_event_at', 'bigint')
    .addColumn('last_event', 'text')
    .addColumn('last_beat_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('things_organisation_created')
    .on('things')
    .columns(['organisation_key', 'created_at', 'thing_key'])
    .execute();
  await db.schema.createIndex('things_template').on('things').column('thing_template_key').execute();

  await db.schema
    .createTable('groups')
    .addColumn('group_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('group_type', 'integer', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull().defaultTo('all'))
    .addColumn('thing_expression', 'text')
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('groups_organisation_created')
    .on('groups')
    .columns(['organisation_key', 'created_at', 'group_key'])
    .execute();

  await db.schema
    .createTable('group_things')
    .addColumn('group_key', 'text', (c) => c.notNull())
    .addColumn('thing_key', 'text', (c) => c.notNull())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('group_things_pk', ['group_key', 'thing_key'])
    .execute();
  await db.schema.createIndex('group_things_thing').on('group_things').column('thing_key').execute();

  await db.schema
    .createTable('gateways')
    .addColumn('gateway_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('gateway_type', 'text')
    .addColumn('gateway_version', 'text')
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('adapters', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('gateways_organisation_created')
    .on('gateways')
    .columns(['organisation_key', 'created_at', 'gateway_key'])
    .execute();

  // Organisations made before this version get the Default template every organisation has.
  const store = db as Kysely<{ organisations: { organisation_key: string }; thing_templates: Record<string, unknown> }>;
  const organisations = await store.selectFrom('organisations').select('organisation_key').execute();
  const now = Date.now();
  for (const { organisation_key } of organisations) {
    await store
      .insertInto('thing_templates')
      .values({
        thing_template_key: newKey(),
        organisation_key,
        name: 'Default',
        description: '',
        metrics: '[]',
        heartbeat_interval: 60,
        idle_timeout: 300,
        is_default: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }
}
