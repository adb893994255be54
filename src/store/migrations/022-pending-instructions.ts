import type { Kysely } from 'kysely';

/**
 * Pending instructions by age: a server connecting to an external broker sends the newest of them
 * again (docs/devices.md, "Instructions"), without reading every instruction ever sent.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('instructions_status_created')
    .on('instructions')
    .columns(['status', 'created_at'])
    .execute();
}
