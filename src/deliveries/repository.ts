/**
 * The delivery queue and its attempts (docs/rules.md, "Deliveries"): the only code that reads or
 * writes the deliveries and delivery_attempts tables. Deliveries are queued in the transaction of the
 * event that fired their rule, claimed by one instance at a time under a lease, and finished with a
 * record of each attempt.
 */

import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { engineOfDb, lockRows } from '../store/dialect.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { DeliveryAttemptRow, DeliveryRow } from '../store/tables.ts';

export interface NewDeliveries {
  organisationKey: string;
  ruleKey: string;
  /** One delivery per action, in this order. */
  actionKeys: readonly string[];
  /** What every one of them carries (JSON text). */
  payload: string;
  now: number;
}

/** Queues one pending delivery per action, due at once. */
export async function enqueueDeliveries(db: Executor, queued: NewDeliveries): Promise<void> {
  if (queued.actionKeys.length === 0) return;
  await db
    .insertInto('deliveries')
    .values(
      queued.actionKeys.map((actionKey) => ({
        delivery_key: newKey(),
        organisation_key: queued.organisationKey,
        notification_action_key: actionKey,
        rule_key: queued.ruleKey,
        payload: queued.payload,
        status: 'pending',
        attempts: 0,
        next_attempt_at: queued.now,
        claimed_by: null,
        claimed_until: null,
        created_at: queued.now,
        updated_at: queued.now,
      })),
    )
    .execute();
}

/** Returns every claim on a pending delivery to the queue. */
export async function releaseClaims(db: Executor): Promise<void> {
  await db
    .updateTable('deliveries')
    .set({ claimed_by: null, claimed_until: null })
    .where('status', '=', 'pending')
    .where('claimed_by', 'is not', null)
    .execute();
}

/** Gives back one delivery this instance claimed and did not attempt: due again at once, for anyone. */
export async function releaseClaim(db: Executor, deliveryKey: string, instance: string): Promise<void> {
  await db
    .updateTable('deliveries')
    .set({ claimed_by: null, claimed_until: null })
    .where('delivery_key', '=', deliveryKey)
    .where('claimed_by', '=', instance)
    .execute();
}

export interface Claim {
  /** The claiming instance. */
  instance: string;
  now: number;
  /** When the claim lapses and the deliveries return to the queue. */
  claimedUntil: number;
  limit: number;
  /** Actions whose deliveries are not claimed now (as many of theirs are under way as may be). */
  exceptActions?: readonly string[];
}

/**
 * Claims up to `limit` pending deliveries that are due and not claimed by anyone (or whose claim has
 * lapsed), soonest due first, and answers them as they were before the claim. Run it in a transaction:
 * on PostgreSQL the rows are locked, passing over those another instance is claiming.
 */
export async function claimDueDeliveries(db: Executor, claim: Claim): Promise<DeliveryRow[]> {
  const due = await db
    .selectFrom('deliveries')
    .selectAll()
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', claim.now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', claim.now)]))
    .$if((claim.exceptActions?.length ?? 0) > 0, (q) =>
      q.where('notification_action_key', 'not in', claim.exceptActions as string[]),
    )
    .orderBy('next_attempt_at')
    .limit(claim.limit)
    .$call(lockRows(engineOfDb(db), { skipLocked: true }))
    .execute();
  if (due.length === 0) return [];
  await db
    .updateTable('deliveries')
    .set({ claimed_by: claim.instance, claimed_until: claim.claimedUntil })
    .where(
      'delivery_key',
      'in',
      due.map((d) => d.delivery_key),
    )
    .execute();
  return due;
}

export interface Outcome {
  status: 'delivered' | 'pending' | 'failed' | 'cancelled';
  /** The delivery's attempts so far, this one included. */
  attempts: number;
  nextAttemptAt: number;
  now: number;
  /** The attempt to record; none for a delivery cancelled without one. */
  attempt?: { number: number; status: 'delivered' | 'failed'; error: string | null; durationMs: number };
}

/**
 * Records a claimed delivery's new state and its attempt, only while `instance` still holds the claim
 * (it is released). Answers whether it did. Run it in a transaction, so both are recorded or neither.
 */
export async function finishDelivery(
  db: Executor,
  delivery: DeliveryRow,
  instance: string,
  outcome: Outcome,
): Promise<boolean> {
  const updated = await db
    .updateTable('deliveries')
    .set({
      status: outcome.status,
      attempts: outcome.attempts,
      next_attempt_at: outcome.nextAttemptAt,
      claimed_by: null,
      claimed_until: null,
      updated_at: outcome.now,
    })
    .where('delivery_key', '=', delivery.delivery_key)
    .where('claimed_by', '=', instance)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) return false;
  if (!outcome.attempt) return true;
  await db
    .insertInto('delivery_attempts')
    .values({
      attempt_key: newKey(),
      delivery_key: delivery.delivery_key,
      notification_action_key: delivery.notification_action_key,
      organisation_key: delivery.organisation_key,
      attempt: outcome.attempt.number,
      status: outcome.attempt.status,
      error: outcome.attempt.error,
      at: outcome.now,
      duration_ms: outcome.attempt.durationMs,
    })
    .execute();
  return true;
}

/** A page of a notification action's delivery attempts. */
export function listDeliveryAttempts(db: Executor, actionKey: string, list: ListQuery) {
  return fetchPage<DeliveryAttemptRow>(
    db,
    {
      name: 'delivery_attempts',
      values: { action: actionKey },
      build: (d, v) =>
        d
          .selectFrom('delivery_attempts')
          .selectAll()
          .where('notification_action_key', '=', v.action as string),
      columns: {
        sort: { at: 'at', attempt: 'attempt', status: 'status' },
        key: 'attempt_key',
        search: ['status', 'error'],
      },
    },
    list,
  );
}

/** The payloads (JSON text) of these deliveries, by key: what each carries from the firing that queued it. */
export async function payloadsOf(db: Executor, deliveryKeys: readonly string[]): Promise<Map<string, string>> {
  if (deliveryKeys.length === 0) return new Map();
  const rows = await db
    .selectFrom('deliveries')
    .select(['delivery_key', 'payload'])
    .where('delivery_key', 'in', [...new Set(deliveryKeys)])
    .execute();
  return new Map(rows.map((row) => [row.delivery_key, row.payload]));
}

/** Deliveries waiting to be made (due now or later), for metrics. */
export async function queueDepth(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}
