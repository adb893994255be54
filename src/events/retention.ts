/**
 * Retention (docs/storage.md): a thing keeps its events for its template's `retention_days`, else its
 * organisation's, and its 15-minute rollups for its organisation's `rollup_retention_days` but never
 * for less time than its events. Queries apply these times as they answer; the sweeper
 * (events/sweeper.ts) frees what they leave out.
 */
import { slotOf } from './rollups.ts';

export const DAY_MS = 86_400_000;

export interface RetentionCuts {
  /** Events of an earlier time (ms) have expired; undefined: kept for ever. */
  events: number | undefined;
  /** Rollup slots that end at or before this time (ms) have expired; undefined: kept for ever. */
  rollups: number | undefined;
}

/** A thing's expiry times now, from its days of event retention and its organisation's of rollups. */
export function retentionCuts(eventDays: number | null, rollupDays: number | null, now: number): RetentionCuts {
  return {
    events: eventDays === null ? undefined : now - eventDays * DAY_MS,
    rollups: eventDays === null || rollupDays === null ? undefined : now - Math.max(eventDays, rollupDays) * DAY_MS,
  };
}

/** The start of the oldest slot a rollup cut keeps: the one the cut falls in (whose end is after it). */
export const firstKeptSlot = (rollups: number | undefined): number | undefined =>
  rollups === undefined ? undefined : slotOf(rollups);
