/**
 * What a firing rule causes (docs/rules.md, "How rules are evaluated", Alert; "What each action does
 * when its rule fires"): its alert, raised through the alerts capability, and one delivery per
 * notification action, queued through the deliveries capability, both in the transaction of the event
 * that fired it, so they commit with the event.
 */
import { renderAlertMessage } from '../alerts/message.ts';
import { raiseAlert } from '../alerts/service.ts';
import { queueDeliveries } from '../deliveries/service.ts';
import type { Tx } from '../store/store.ts';
import { type ThingWithTemplate, thingSnapshot } from '../things/service.ts';
import type { Firing } from './evaluator.ts';

/** What a firing caused: deliveries queued, and the alert raised (null when none). */
export interface Fired {
  queued: number;
  alertKey: string | null;
}

/**
 * Raises the rule's alert (unless it has no alert type) and queues its actions, for `thing` as it is
 * now; a thing that is gone causes nothing. `at` is the alert's time: the event's, or for a no_data
 * rule the time it fired (then the event is the thing's last, if any).
 */
export async function fire(
  tx: Tx,
  organisationKey: string,
  { rule, candidate }: Firing,
  thing: ThingWithTemplate | undefined,
  at = candidate.event.timestamp,
): Promise<Fired> {
  if (!thing) return { queued: 0, alertKey: null };
  const snapshot = thingSnapshot(thing);
  const message =
    rule.row.alert_message.trim() === ''
      ? rule.row.condition.trim() === ''
        ? `${rule.row.name} (${thing.name})`
        : `${rule.row.name}: ${rule.row.condition} (${thing.name})`
      : renderAlertMessage(rule.row.alert_message, candidate.event.data, snapshot);
  // The event's time stays epoch ms, as in every alert stored so far: alerts/presenter.ts presents it from ms.
  const event = { timestamp: candidate.event.timestamp, data: candidate.event.data };
  const alert =
    rule.row.alert_type === null
      ? null
      : await raiseAlert(tx, {
          organisationKey,
          thing,
          alertType: rule.row.alert_type,
          message,
          timestamp: at,
          ruleKey: rule.row.rule_key,
          data: { rule_key: rule.row.rule_key, rule_name: rule.row.name, event },
        });
  const queued = await queueDeliveries(tx, {
    organisationKey,
    ruleKey: rule.row.rule_key,
    actionKeys: rule.actions.map((action) => action.notification_action_key),
    payload: {
      rule: { rule_key: rule.row.rule_key, name: rule.row.name, alert_type: rule.row.alert_type },
      thing: snapshot,
      event,
      alert: alert
        ? {
            alert_key: alert.alert_key,
            alert_type: alert.alert_type,
            message: alert.message,
            timestamp: alert.timestamp,
          }
        : null,
      message,
    },
  });
  return { queued, alertKey: alert?.alert_key ?? null };
}
