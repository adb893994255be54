/**
 * Which metrics of a chart share a y scale, what its axis is labelled and how its legend writes a value
 * (docs/console.md, "Pages"): pure choices over the chart's columns, apart from how
 * components/chart.tsx draws them with uPlot.
 */

/** x (epoch seconds) first, then one column per metric, null where an event lacks it. */
export interface Columns {
  metrics: string[];
  x: number[];
  ys: (number | null)[][];
}

/** A template's metrics' units by name, as `scalesOf` takes them: a metric without one is left out. */
export const unitsOfMetrics = (metrics: { name: string; unit?: string | null }[]): Record<string, string> =>
  Object.fromEntries(metrics.flatMap((m) => (m.unit ? [[m.name, m.unit]] : [])));

/**
 * A y scale and the metrics drawn on it (their indexes in the columns), with the unit they share or,
 * for metrics without one, the extent of their values and the narrowest member's size.
 */
export interface Scale {
  unit?: string;
  metrics: number[];
  lo: number;
  hi: number;
  size: number;
}

/**
 * How many times a metric's own size (the larger of its spread and its distance from 0) the range it
 * shares may be: beyond that its line is too flat to read, and it takes a scale of its own.
 */
const FLAT = 5;

/**
 * The metrics' y scales (docs/console.md, "Pages"), the most crowded first (on a tie, the one whose
 * first metric comes first in the columns: the template's order). Metrics of one unit share
 * a scale, whatever their values, so that they can be compared; metrics of no unit share one while
 * their values are alike, so that a status of 0 and 1 or a pressure of 1000 is not drawn flat beside a
 * temperature of 20 to 90. The first scale has the left axis and the second the right one, each labelled
 * with its unit (or its metrics' names); any further scale fills the plot's height without an axis,
 * which reads better than a third axis squeezing the plot or a line flattened against others, and its
 * metrics' values are read in the legend, as the note under the chart says.
 */
export function scalesOf(columns: Columns, units: Record<string, string>): Scale[] {
  const scales: Scale[] = [];
  const order = columns.metrics.map((_, i) => i).sort((a, b) => compare(columns.metrics[a], columns.metrics[b]));
  for (const i of order) {
    const unit = units[columns.metrics[i] as string] || undefined;
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (const y of columns.ys[i] ?? []) {
      if (y == null) continue;
      if (y < lo) lo = y;
      if (y > hi) hi = y;
    }
    const size = Math.max(hi - lo, Math.abs(lo), Math.abs(hi)) || 1;
    const shared = scales.find((scale) =>
      unit !== undefined
        ? scale.unit === unit
        : scale.unit === undefined &&
          (lo > hi ||
            scale.lo > scale.hi ||
            Math.max(hi, scale.hi) - Math.min(lo, scale.lo) <= FLAT * Math.min(size, scale.size)),
    );
    if (!shared) {
      scales.push({ unit, metrics: [i], lo, hi, size: lo > hi ? Number.POSITIVE_INFINITY : size });
      continue;
    }
    shared.metrics.push(i);
    if (lo > hi) continue;
    shared.lo = Math.min(shared.lo, lo);
    shared.hi = Math.max(shared.hi, hi);
    shared.size = Math.min(shared.size, size);
  }
  // Metrics were taken in name order: a scale's place in the columns is its earliest column.
  const first = (scale: Scale) => Math.min(...scale.metrics);
  return scales.sort((a, b) => b.metrics.length - a.metrics.length || first(a) - first(b));
}

const compare = (a = '', b = '') => (a < b ? -1 : a > b ? 1 : 0);

/** What an axis says it measures: its unit, else its metrics' names (shortened past 40 characters). */
export function labelOf(scale: Scale, metrics: string[]): string {
  if (scale.unit) return scale.unit;
  const names = scale.metrics.map((i) => metrics[i]).join(', ');
  return names.length > 40 ? `${names.slice(0, 39)}…` : names;
}

/** The metrics' names, as a sentence lists them. */
export function listOf(names: string[]): string {
  return names.length < 2 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/**
 * A legend's value, readably: at most 6 significant digits, so that the float noise of an answer
 * (1.5999999999999999) reads 1.6, but never fewer than a number's whole digits (1234567.8 reads
 * 1234568), so that a whole number keeps every digit; with the decimal sign of the user's locale (the
 * formats `make` gives), and no grouping, as a value is written elsewhere in the console. An engine
 * that ignores `roundingPriority` (Firefox before 116) would cut a value of 7 or more whole digits to 6
 * (1234570): there such a value is written whole, rounded to its units.
 */
export function legendNumber(
  make: (options: Intl.NumberFormatOptions) => Intl.NumberFormat = (options) =>
    new Intl.NumberFormat(undefined, options),
): (value: number) => string {
  const readable = make({
    useGrouping: false,
    maximumSignificantDigits: 6,
    maximumFractionDigits: 0,
    roundingPriority: 'morePrecision',
  });
  if (readable.resolvedOptions().roundingPriority === 'morePrecision') return (value) => readable.format(value);
  const whole = make({ useGrouping: false, maximumFractionDigits: 0 });
  return (value) => (Math.abs(value) >= 1e6 ? whole : readable).format(value);
}
