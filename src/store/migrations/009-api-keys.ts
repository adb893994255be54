import type { Kysely } from 'kysely';

/** API keys for scripts and integrations (docs/api.md, "API keys"): only their tokens' hashes are kept. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('api_keys')
    .addColumn('api_key_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('role_key', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_organisation').on('api_keys').column('organisation_key').execute();
}
