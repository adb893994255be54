/** Secrets the server makes for itself once and keeps in the store, shared by every instance. */
import { randomBytes } from 'node:crypto';
import type { Executor } from './store.ts';

/** The secret kept under `name`, if one was ever made; never makes one. */
export async function storedServerSecret(db: Executor, name: string): Promise<string | undefined> {
  const row = await db.selectFrom('server_secrets').select('value').where('name', '=', name).executeTakeFirst();
  return row?.value;
}

/** The secret kept under `name`, made now if there is none. */
export async function serverSecret(db: Executor, name: string): Promise<string> {
  const existing = await storedServerSecret(db, name);
  if (existing !== undefined) return existing;
  // Two instances may start together: the first insert wins and both read it back.
  await db
    .insertInto('server_secrets')
    .values({ name, value: randomBytes(32).toString('base64') })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const stored = await storedServerSecret(db, name);
  if (stored === undefined) throw new Error(`the server secret ${name} was not kept`);
  return stored;
}
