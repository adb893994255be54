import type { TimeFormatter } from '../core/time.ts';
import type { RuleRow } from '../store/tables.ts';

export function presentRule(row: RuleRow, time: TimeFormatter) {
  return {
    rule_key: row.rule_key,
    name: row.name,
    description: row.description,
    thing_template_key: row.thing_template_key,
    thing_keys: JSON.parse(row.thing_keys) as string[],
    group_key: row.group_key,
    condition: row.condition,
    alert_type: row.alert_type,
    alert_message: row.alert_message,
    trigger: row.trigger,
    enabled: row.enabled === 1,
    for_seconds: row.for_seconds,
    auto_clear: row.auto_clear === 1,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
