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
    data: presentStoredTimestamps(JSON.parse(row.data), time),
    status: row.status,
    acknowledged_at: row.acknowledged_at === null ? null : time(row.acknowledged_at),
    acknowledged_by: row.acknowledged_by,
    cleared_at: row.cleared_at === null ? null : time(row.cleared_at),
    cleared_by: row.cleared_by,
    rule_key: row.rule_key,
    comment: row.comment,
  };
}
