/**
 * What a change did, read from an audit trail's contents before and after (docs/console.md,
 * "Pages", Audit trail): the fields whose values differ, each with its value before and after as
 * text. A create has no before and a delete no after: every field of the other side is listed.
 */

import { cutText } from '../format.ts';

/** One field a change touched; `before`/`after` undefined where that side has no such field. */
export interface FieldChange {
  field: string;
  before: string | undefined;
  after: string | undefined;
}

/** Values longer than this are cut, with an ellipsis: the row stays readable, the API has them whole. */
const MAX_VALUE = 300;

/** A field holding a time: `created_at`, `updated_at`, `last_used_at`, `timestamp`... */
const TIME_FIELD = /(^|_)(at|timestamp)$/;

/**
 * A value as the list shows it: text as it is, a time field's epoch seconds through `time` when given,
 * anything else as JSON.
 */
export function valueText(value: unknown, field = '', time?: (seconds: number) => string): string {
  if (time && typeof value === 'number' && TIME_FIELD.test(field)) return time(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return cutText(text, MAX_VALUE);
}

const isEmpty = (value: unknown) => value === null || value === undefined || value === '';

/** The fields that differ between `before` and `after`, in the order the contents name them. */
export function changedFields(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
  time?: (seconds: number) => string,
): FieldChange[] {
  const old = before ?? {};
  const now = after ?? {};
  const fields = [...new Set([...Object.keys(now), ...Object.keys(old)])];
  const changes: FieldChange[] = [];
  for (const field of fields) {
    const was = old[field];
    const is = now[field];
    if (JSON.stringify(was) === JSON.stringify(is)) continue;
    // A create's or delete's empty fields say nothing.
    if (isEmpty(was) && isEmpty(is)) continue;
    changes.push({
      field,
      before: field in old ? valueText(was, field, time) : undefined,
      after: field in now ? valueText(is, field, time) : undefined,
    });
  }
  return changes;
}
