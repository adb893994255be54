import { storedTags } from '../core/tags.ts';
import type { TimeFormatter } from '../core/time.ts';
import type { GroupRow } from '../store/tables.ts';

/** A group as answered (docs/api.md, "Groups"). */
export function presentGroup(row: GroupRow, time: TimeFormatter) {
  return {
    group_key: row.group_key,
    name: row.name,
    description: row.description,
    group_type: row.group_type,
    scope: row.scope,
    thing_expression: row.thing_expression,
    tags: storedTags(row).join(','),
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
