import type { Kysely } from 'kysely';

/**
 * A counter per organisation and entity type, raised in the transaction of every recorded change of
 * that type (audit/revisions.ts): a list answer kept in memory is served again only while the
 * counters it was read under are unchanged, on every instance sharing the store.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('change_revisions')
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('entity_type', 'text', (c) => c.notNull())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('change_revisions_pkey', ['organisation_key', 'entity_type'])
    .execute();
}
