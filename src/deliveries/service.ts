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

/** A page of a notification action's delivery attempts. */
export function listDeliveryAttempts(db: Executor, actionKey: string, list: ListQuery) {
  return queue.listDeliveryAttempts(db, actionKey, list);
}

/** Deliveries waiting to be made, for metrics. */
export function deliveryQueueDepth(db: Executor): Promise<number> {
  return queue.queueDepth(db);
}
