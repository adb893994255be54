import type { ListQuery } from '../core/list-query.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { InstructionRow } from '../store/tables.ts';

export function listInstructions(db: Executor, organisationKey: string, thingKey: string, list: ListQuery) {
  return fetchPage<InstructionRow>(
    db,
    {
      name: 'instructions',
      values: { organisation: organisationKey, thing: thingKey },
      build: (d, v) =>
        d
          .selectFrom('instructions')
          .selectAll()
          .where('organisation_key', '=', v.organisation as string)
          .where('thing_key', '=', v.thing as string),
      columns: {
        sort: {
          created_at: 'created_at',
          updated_at: 'updated_at',
          name: 'name',
          status: 'status',
          instruction_key: 'instruction_key',
        },
        key: 'instruction_key',
        search: ['instruction_key', 'name', 'status'],
      },
    },
    list,
  );
}

export function findInstruction(db: Executor, organisationKey: string, thingKey: string, key: string) {
  return db
    .selectFrom('instructions')
    .selectAll()
    .where('instruction_key', '=', key)
    .where('organisation_key', '=', organisationKey)
    .where('thing_key', '=', thingKey)
    .executeTakeFirst();
}

export async function insertInstruction(db: Executor, row: InstructionRow): Promise<void> {
  await db.insertInto('instructions').values(row).execute();
}

/** Instructions not yet acknowledged, newest last, for sending again. */
export function unacknowledged(db: Executor, organisationKey: string, thingKey: string | undefined, limit = 100) {
  let query = db
    .selectFrom('instructions')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('status', 'in', ['pending', 'delivered']);
  if (thingKey !== undefined) query = query.where('thing_key', '=', thingKey);
  return query.orderBy('created_at', 'desc').limit(limit).execute();
}

/**
 * The newest `limit` instructions that no device or broker has taken yet, newest first, of every
 * organisation that has a key pair (without one, no device can be sent them: they would take the
 * others' places for ever).
 */
export function pendingEverywhere(db: Executor, limit: number) {
  return db
    .selectFrom('instructions as i')
    .selectAll('i')
    .where('i.status', '=', 'pending')
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('key_pairs as k').select('k.access_key').whereRef('k.organisation_key', '=', 'i.organisation_key'),
      ),
    )
    .orderBy('i.created_at', 'desc')
    .limit(limit)
    .execute();
}

/** pending -> delivered; a later state is never undone. Answers the instruction when it changed. */
export function markDelivered(db: Executor, alertKey: string, now = Date.now()): Promise<InstructionRow | undefined> {
  return db
    .updateTable('instructions')
    .set({ status: 'delivered', delivered_at: now, updated_at: now })
    .where('alert_key', '=', alertKey)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

/** The device acknowledged the instruction (its alert was updated). Answers the instruction. */
export function markAcknowledged(
  db: Executor,
  instructionKey: string,
  now = Date.now(),
): Promise<InstructionRow | undefined> {
  return db
    .updateTable('instructions')
    .set({ status: 'acknowledged', acknowledged_at: now, updated_at: now })
    .where('instruction_key', '=', instructionKey)
    .returningAll()
    .executeTakeFirst();
}

/** An instruction of an organisation by its key alone. */
export function findInstructionByKey(db: Executor, organisationKey: string, key: string) {
  return db
    .selectFrom('instructions')
    .selectAll()
    .where('instruction_key', '=', key)
    .where('organisation_key', '=', organisationKey)
    .executeTakeFirst();
}
