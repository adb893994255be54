/**
 * When events expire (docs/storage.md, "Retention"): a thing keeps its events for its template's
 * `retention_days`, else its organisation's. The events capability applies it to queries, ingestion
 * and the sweeper (events/retention.ts), and the things capability to a thing's `last_event`.
 */

export const DAY_MS = 86_400_000;

/** The time (ms) before which events kept for `days` days have expired at `now`; undefined: kept for ever. */
export const eventsExpireBefore = (days: number | null, now: number): number | undefined =>
  days === null ? undefined : now - days * DAY_MS;

/** Whether an event of `timestamp` (ms) kept for `days` days has expired at `now`. */
export function hasExpired(timestamp: number, days: number | null, now: number): boolean {
  const before = eventsExpireBefore(days, now);
  return before !== undefined && timestamp < before;
}
