/**
 * Retention (docs/storage.md): a thing keeps its events for its template's `retention_days`, else its
 * organisation's, and its 15-minute rollups for its organisation's `rollup_retention_days` but never
 * for less time than its events. Queries apply these times as they answer; the sweeper
 * (events/sweeper.ts) frees what they leave out.
 */
import { DAY_MS, eventsExpireBefore, hasExpired } from '../core/retention.ts';
import type { Executor } from '../store/store.ts';
import { eventRetentionOf } from './repository.ts';
import { slotOf } from './rollups.ts';

export { DAY_MS };

export interface RetentionCuts {
  /** Events of an earlier time (ms) have expired; undefined: kept for ever. */
  events: number | undefined;
  /** Rollup slots that end at or before this time (ms) have expired; undefined: kept for ever. */
  rollups: number | undefined;
}

/** A thing's expiry times now, from its days of event retention and its organisation's of rollups. */
export function retentionCuts(eventDays: number | null, rollupDays: number | null, now: number): RetentionCuts {
  return {
    events: eventsExpireBefore(eventDays, now),
    rollups: eventDays === null || rollupDays === null ? undefined : now - Math.max(eventDays, rollupDays) * DAY_MS,
  };
}

/** The start of the oldest slot a rollup cut keeps: the one the cut falls in (whose end is after it). */
export const firstKeptSlot = (rollups: number | undefined): number | undefined =>
  rollups === undefined ? undefined : slotOf(rollups);

/** What of a batch of events retention looks at. */
interface TimedBatch {
  events: readonly { thingId: number; timestamp: number }[];
}

/**
 * The batches without the events that have already expired as they arrive (docs/storage.md,
 * "Retention"): those are acknowledged with the rest and not kept at all, as if the sweeper had
 * deleted them at once, rollups included. Only events older than the shortest retention (a day)
 * need their things' retention read, so live ingestion reads nothing.
 */
export async function withoutExpired<B extends TimedBatch>(db: Executor, batches: B[], now: number): Promise<B[]> {
  const old = new Set<number>();
  for (const b of batches) for (const e of b.events) if (e.timestamp < now - DAY_MS) old.add(e.thingId);
  if (old.size === 0) return batches;
  const days = await eventRetentionOf(db, [...old]);
  return batches.map((b) => {
    const kept = b.events.filter((e) => !hasExpired(e.timestamp, days.get(e.thingId) ?? null, now));
    return kept.length === b.events.length ? b : { ...b, events: kept };
  });
}
