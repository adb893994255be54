import { presentStoredTimestamps, type TimeFormatter } from '../core/time.ts';
import type { AuditTrailRow } from '../store/tables.ts';

export function presentAuditTrail(row: AuditTrailRow, time: TimeFormatter) {
  return {
    audit_trail_key: row.audit_trail_key,
    action_taken: row.action_taken,
    entity_type: row.entity_type,
    entity_key: row.entity_key,
    entity_name: row.entity_name,
    new_entity_contents: presentStoredTimestamps(JSON.parse(row.new_entity_contents), time),
    old_entity_contents: presentStoredTimestamps(JSON.parse(row.old_entity_contents), time),
    timestamp: time(row.timestamp),
    user_name: row.user_name,
    role_name: row.role_name,
  };
}
