/**
 * A time series widget's raw lines (the events themselves, not averages): a line per thing and
 * metric, and the live events that join them.
 */
import type { Columns } from '../components/chart-scales.ts';
import { holdsPoint } from '../components/points.ts';

/** The value at a metric's path (`machine.status` reads nested data, as the API does). */
export function pick(data: unknown, metric: string): unknown {
  let value: unknown = data;
  for (const part of metric.split('.')) {
    if (!value || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

export const asNumber = (value: unknown): number | null => (typeof value === 'number' ? value : null);

/** What the columns are: a line for each thing (in this order) and metric, over a range. */
export interface Lines {
  things: string[];
  metrics: string[];
  /** The range's start, epoch seconds: older events are not drawn. */
  from: number;
  /** A saved range's end (later events are not drawn); none for a rolling range, which ends now. */
  to: number | undefined;
}

/** A realtime `event` message: lines read its `thing_key`, `timestamp` and `data`. */
export type LiveEvent = Record<string, unknown>;

/** The value an event gives each column: its thing's metrics; undefined for other things' columns. */
function valuesOf(lines: Lines, event: LiveEvent): ((column: number) => number | null | undefined) | undefined {
  const thing = lines.things.indexOf(String(event.thing_key));
  if (thing < 0) return undefined;
  const width = lines.metrics.length;
  return (column) =>
    Math.floor(column / width) === thing
      ? asNumber(pick(event.data, lines.metrics[column % width] as string))
      : undefined;
}

/** Adds a live event to the columns in time order; false when it is not theirs to draw. */
export function addToLines(columns: Columns, lines: Lines, event: LiveEvent): boolean {
  // Columns read for other things or metrics (a widget just changed) wait for their read again.
  if (columns.ys.length !== lines.things.length * lines.metrics.length) return false;
  const values = valuesOf(lines, event);
  const timestamp = event.timestamp;
  if (!values || typeof timestamp !== 'number' || timestamp < lines.from) return false;
  if (lines.to !== undefined && timestamp > lines.to) return false;
  let at = columns.x.length;
  while (at > 0 && (columns.x[at - 1] as number) > timestamp) at--;
  columns.x.splice(at, 0, timestamp);
  columns.ys.forEach((column, i) => {
    column.splice(at, 0, values(i) ?? null);
  });
  return true;
}

/**
 * Adds the live events that came while the columns were read. Each thing's read may have been
 * answered before or after an event of it was stored: an event joins from its thing's last point read
 * on, unless the read holds it at that time (events carry whole seconds, components/points.ts).
 */
export function joinArrived(columns: Columns, lines: Lines, arrived: LiveEvent[]): void {
  for (const event of arrived) {
    const values = valuesOf(lines, event);
    const timestamp = event.timestamp;
    if (!values || typeof timestamp !== 'number') continue;
    const last = lastPointOf(columns, lines, String(event.thing_key));
    if (timestamp < last || (timestamp === last && holdsPoint(columns, timestamp, values))) continue;
    addToLines(columns, lines, event);
  }
}

/** The time of a thing's last point in the columns. */
function lastPointOf(columns: Columns, lines: Lines, thingKey: string): number {
  const thing = lines.things.indexOf(thingKey);
  const width = lines.metrics.length;
  const mine = columns.ys.slice(thing * width, (thing + 1) * width);
  for (let i = columns.x.length - 1; i >= 0; i--) if (mine.some((ys) => ys[i] != null)) return columns.x[i] as number;
  return Number.NEGATIVE_INFINITY;
}

/** An event as a thing's read answers it. */
export interface ReadEvent {
  timestamp: number;
  data: unknown;
}

/**
 * The raw lines' columns from each thing's events as read, in `lines.things`' order, each in time
 * order. Things' events of one second share a row; a thing's second event of a second (events carry
 * whole seconds) has a row of its own at that time, so that a thing sending twice a second keeps every
 * point. An event without a number for any metric draws nothing.
 */
export function rawColumns(lines: Pick<Lines, 'things' | 'metrics'>, labels: string[], reads: ReadEvent[][]): Columns {
  const width = lines.metrics.length;
  const rowsAt = new Map<number, (number | null)[][]>();
  reads.forEach((events, thing) => {
    let second = Number.NaN;
    let nth = 0;
    for (const event of events) {
      const values = lines.metrics.map((m) => asNumber(pick(event.data, m)));
      if (values.every((v) => v === null)) continue;
      nth = event.timestamp === second ? nth + 1 : 0;
      second = event.timestamp;
      let rows = rowsAt.get(second);
      if (!rows) {
        rows = [];
        rowsAt.set(second, rows);
      }
      while (rows.length <= nth) rows.push(labels.map(() => null));
      (rows[nth] as (number | null)[]).splice(thing * width, width, ...values);
    }
  });
  const times = [...rowsAt.keys()].sort((a, b) => a - b);
  const rows = times.flatMap((t) => rowsAt.get(t) as (number | null)[][]);
  return {
    metrics: labels,
    x: times.flatMap((t) => (rowsAt.get(t) as unknown[]).map(() => t)),
    ys: labels.map((_, i) => rows.map((row) => row[i] ?? null)),
  };
}
