import { redactedSnapshot } from '../actions/credentials.ts';
import { presentStoredTimestamps, type TimeFormatter } from '../core/time.ts';
import type { AuditTrailRow } from '../store/tables.ts';

export function presentAuditTrail(row: AuditTrailRow, time: TimeFormatter) {
  return {
    audit_trail_key: row.audit_trail_key,
    action_taken: row.action_taken,
    entity_type: row.entity_type,
    entity_key: row.entity_key,
    entity_name: row.entity_name,
    new_entity_contents: presentContents(row.entity_type, row.new_entity_contents, time),
    old_entity_contents: presentContents(row.entity_type, row.old_entity_contents, time),
    timestamp: time(row.timestamp),
    user_name: row.user_name,
    role_name: row.role_name,
  };
}

/**
 * A stored snapshot, its timestamps in the request's format. An alert's `data` holds snapshots too (its
 * thing, its instruction, the rule's event), stored in epoch seconds like the alert itself
 * (alerts/presenter.ts); the `data` of anything else, and the event's own data, belong to users.
 */
function presentContents(entityType: string, text: string, time: TimeFormatter): unknown {
  const stored = JSON.parse(text) as Record<string, unknown>;
  const contents = presentStoredTimestamps(stored, time) as Record<string, unknown>;
  // A notification action's credentials, redacted when it was recorded, are redacted again as they are
  // now known (docs/rules.md, "Notification actions").
  if (entityType === 'NotificationAction') return redactedSnapshot(contents);
  if (entityType !== 'Alert' || stored.data === null || typeof stored.data !== 'object') return contents;
  return { ...contents, data: presentStoredTimestamps(stored.data, time) };
}
