/**
 * Queuing deliveries (docs/rules.md, "What each action does when its rule fires"): one per notification
 * action of a firing rule, written in the transaction of the event that fired it, each carrying what
 * its sender needs (senders.ts). The worker (worker.ts) carries them out.
 */
import type { ListQuery } from '../core/list-query.ts';
import type { Executor } from '../store/store.ts';
import * as queue from './repository.ts';

/** What a delivery carries from the firing that queued it: its rule, thing, event, alert and message. */
export interface DeliveryPayload {
  rule: { rule_key: string; name: string; alert_type: number | null };
  thing: { thing_key: string; name: string; [field: string]: unknown };
  event: { timestamp: number; data: unknown };
  alert: { alert_key: string; alert_type: number; message: string; timestamp: number } | null;
  message: string;
}

export interface RuleDeliveries {
  organisationKey: string;
  ruleKey: string;
  /** The rule's notification actions, one delivery each. */
  actionKeys: readonly string[];
  payload: DeliveryPayload;
}

/** Queues the deliveries inside the caller's transaction; answers how many were queued. */
export async function queueDeliveries(db: Executor, deliveries: RuleDeliveries, now = Date.now()): Promise<number> {
  if (deliveries.actionKeys.length === 0) return 0;
  await queue.enqueueDeliveries(db, {
    organisationKey: deliveries.organisationKey,
    ruleKey: deliveries.ruleKey,
    actionKeys: deliveries.actionKeys,
    payload: JSON.stringify(deliveries.payload),
    now,
  });
  return deliveries.actionKeys.length;
}

/** What a delivery attempt was for: the rule that fired, its thing, the alert it raised and the message. */
export interface DeliveryCause {
  rule_key: string | null;
  rule_name: string | null;
  thing_key: string | null;
  thing_name: string | null;
  alert_key: string | null;
  message: string | null;
}

const UNKNOWN_CAUSE: DeliveryCause = {
  rule_key: null,
  rule_name: null,
  thing_key: null,
  thing_name: null,
  alert_key: null,
  message: null,
};

/** The cause written in a delivery's payload; unknown parts are null. */
function causeOf(payload: string | undefined): DeliveryCause {
  if (payload === undefined) return UNKNOWN_CAUSE;
  const carried = JSON.parse(payload) as Partial<DeliveryPayload>;
  return {
    rule_key: carried.rule?.rule_key ?? null,
    rule_name: carried.rule?.name ?? null,
    thing_key: carried.thing?.thing_key ?? null,
    thing_name: carried.thing?.name ?? null,
    alert_key: carried.alert?.alert_key ?? null,
    message: carried.message ?? null,
  };
}

/** A page of a notification action's delivery attempts, each with what it was for. */
export async function listDeliveryAttempts(db: Executor, actionKey: string, list: ListQuery) {
  const page = await queue.listDeliveryAttempts(db, actionKey, list);
  const payloads = await queue.payloadsOf(
    db,
    page.rows.map((row) => row.delivery_key),
  );
  return { ...page, rows: page.rows.map((row) => ({ ...row, ...causeOf(payloads.get(row.delivery_key)) })) };
}

/** Deliveries waiting to be made, for metrics. */
export function deliveryQueueDepth(db: Executor): Promise<number> {
  return queue.queueDepth(db);
}
