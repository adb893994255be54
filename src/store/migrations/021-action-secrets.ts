import type { Kysely } from 'kysely';

/**
 * Notification actions' credentials sealed at rest (docs/rules.md, "Notification actions"): an HTTP
 * kind's `url`, `headers` and `query`, sealed together under the server's secret key. A row made
 * before keeps them in their own columns until the server's start seals them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notification_actions').addColumn('secrets_sealed', 'text').execute();
}
