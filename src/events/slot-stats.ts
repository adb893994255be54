/**
 * A rollup slot's stats (events/rollups.ts) as data: how they are written, read and merged. No imports,
 * so that the SQLite store can merge stored stats in SQL with the same code (store/dialect.ts).
 */

/**
 * count, sum, min, max of a metric's finite numeric values (min and max null when count is 0). A sum
 * past the largest double (JSON has no Infinity: it is written null) stays null through every merge,
 * and is answered null, as a sum of the events themselves past it is.
 */
export type MetricStats = [count: number, sum: number | null, min: number | null, max: number | null];

/** By metric name; a null prototype, since names come from users. */
export type SlotStats = Record<string, MetricStats>;

export const emptyStats = (): SlotStats => Object.create(null) as SlotStats;

/** Two counts of one metric as one. */
function combineStats(a: MetricStats, b: MetricStats): MetricStats {
  return [
    a[0] + b[0],
    a[1] === null || b[1] === null ? null : a[1] + b[1],
    a[2] === null ? b[2] : b[2] === null ? a[2] : Math.min(a[2], b[2]),
    a[3] === null ? b[3] : b[3] === null ? a[3] : Math.max(a[3], b[3]),
  ];
}

/** Two counts of one slot as one: only the metrics both covered stay covered. */
export function mergeSlotStats(a: SlotStats, b: SlotStats): SlotStats {
  const merged = emptyStats();
  for (const name of Object.keys(a)) {
    if (Object.hasOwn(b, name)) merged[name] = combineStats(a[name] as MetricStats, b[name] as MetricStats);
  }
  return merged;
}

/** Stored stats text as stats with a null prototype. */
export function parseSlotStats(text: string): SlotStats {
  return Object.assign(emptyStats(), JSON.parse(text) as SlotStats);
}

/** Stored stats texts merged (the SQL function `merge_slot_stats` on SQLite), as text. */
export function mergeSlotStatsText(stored: string, added: string): string {
  return JSON.stringify(mergeSlotStats(parseSlotStats(stored), parseSlotStats(added)));
}
