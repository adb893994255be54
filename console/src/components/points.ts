/** A chart's columns (chart.tsx's `Columns`): times, and a column of values for each line. */
interface Points {
  x: number[];
  ys: (number | null | undefined)[][];
}

/**
 * Whether the columns hold a point at `timestamp` whose values are those `value` gives for each column
 * (undefined for a column that does not matter): a live event that a read brought too. Events carry
 * whole seconds, so an event taken live during a read may share its second with the read's last point
 * and be the same event or another; its values tell which.
 */
export function holdsPoint(
  columns: Points,
  timestamp: number,
  value: (column: number) => number | null | undefined,
): boolean {
  for (let i = columns.x.length - 1; i >= 0 && (columns.x[i] as number) >= timestamp; i--) {
    if (columns.x[i] !== timestamp) continue;
    if (columns.ys.every((ys, column) => value(column) === undefined || (ys[i] ?? null) === value(column))) return true;
  }
  return false;
}
