/** Secrets the server makes for itself once and keeps in the store, shared by every instance. */
import { randomBytes } from 'node:crypto';
import type { Executor } from './store.ts';

export async function serverSecret(db: Executor, name: string): Promise<string> {
  const existing = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  if (existing) return existing.value;
  // Two instances may start together: the first insert wins and both read it back.
  await db
    .insertInto('server_secrets')
    .values({ name, value: randomBytes(32).toString('base64') })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const stored = await db
    .selectFrom('server_secrets')
    .select('value')
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return stored.value;
}
