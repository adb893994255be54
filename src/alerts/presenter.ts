import { presentStoredTimestamps, type TimeFormatter } from '../core/time.ts';
import type { AlertRow } from '../store/tables.ts';
import { ALERT_TYPE_NAMES } from './schemas.ts';

export const alertTypeName = (alertType: number): string => ALERT_TYPE_NAMES[alertType] ?? 'Info';

/**
 * An alert as answered; `instruction_key` and `instruction_name` only on an instruction's
 * (docs/rules.md, "Alerts").
 */
export function presentAlert(row: AlertRow, time: TimeFormatter) {
  return {
    alert_key: row.alert_key,
    alert_type: row.alert_type,
    alert_type_string: alertTypeName(row.alert_type),
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
    timestamp: time(row.timestamp),
    message: row.message,
    thing_key: row.thing_key,
    thing_name: row.thing_name,
    ...(row.instruction_key !== null
      ? { instruction_key: row.instruction_key, instruction_name: row.instruction_name ?? '' }
      : {}),
    data: presentData(row, time),
    status: row.status,
    acknowledged_at: row.acknowledged_at === null ? null : time(row.acknowledged_at),
    acknowledged_by: row.acknowledged_by,
    cleared_at: row.cleared_at === null ? null : time(row.cleared_at),
    cleared_by: row.cleared_by,
    rule_key: row.rule_key,
    comment: row.comment,
  };
}

/**
 * An alert's data, its timestamps in the request's format. Snapshots in it (`thing`) are stored in
 * epoch seconds, but the event a rule put in it (rules/firing.ts) keeps the event's epoch ms, in rows
 * stored before and since: that one is presented from ms, so that it reads like every other timestamp.
 */
function presentData(row: AlertRow, time: TimeFormatter): unknown {
  const stored = JSON.parse(row.data) as Record<string, unknown>;
  const data = presentStoredTimestamps(stored, time) as Record<string, unknown>;
  const event = stored.event as { timestamp?: unknown } | null | undefined;
  // A device acknowledging the alert replaces its data (alerts/service.ts): the rule's event is gone then.
  if (row.rule_key === null || stored.rule_key !== row.rule_key || typeof event?.timestamp !== 'number') return data;
  return { ...data, event: { ...(data.event as object), timestamp: time(event.timestamp) } };
}
