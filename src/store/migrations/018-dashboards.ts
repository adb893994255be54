import type { Kysely } from 'kysely';

/**
 * Dashboards (docs/api.md, "Dashboards"): a name, a time range, variables and widgets, kept as JSON
 * text, shared inside an organisation.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dashboards')
    .addColumn('dashboard_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('time_range', 'text', (c) => c.notNull())
    .addColumn('variables', 'text', (c) => c.notNull())
    .addColumn('widgets', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('dashboards_organisation')
    .on('dashboards')
    .columns(['organisation_key', 'created_at'])
    .execute();
}
