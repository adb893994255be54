/**
 * A thing's `Telemetry` panel: the chart of a range (docs/console.md, "Pages"), read from
 * thing_data or thing_aggregated_data, with live events added to the ranges of an hour or less.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import { Chart, type ChartHandle, type Columns } from '../components/chart.tsx';
import { Field } from '../components/field.tsx';
import { holdsPoint } from '../components/points.ts';
import { countOf, groupingSeconds, showDuration } from '../format.ts';
import { type Message, realtime } from '../realtime.ts';

/**
 * Ranges of the picker: raw events up to six hours, averages per bucket beyond. The last 5 and 15
 * minutes are a closer look at a device that sends every few seconds; they, and the last hour (shown
 * first), follow live events.
 */
export const RANGES = [
  { label: 'Last 5 minutes', seconds: 300, live: true },
  { label: 'Last 15 minutes', seconds: 900, live: true },
  { label: 'Last hour', seconds: 3600, live: true },
  { label: 'Last 6 hours', seconds: 6 * 3600 },
  { label: 'Last 24 hours', seconds: 86400, grouping: 'minute', every: 5 },
  { label: 'Last 7 days', seconds: 7 * 86400, grouping: 'hour', every: 1 },
  { label: 'Last 30 days', seconds: 30 * 86400, grouping: 'hour', every: 6 },
] as const;
type Range = (typeof RANGES)[number];
const FIRST_RANGE = RANGES[2];

/**
 * Events of a raw range drawn one by one at most, read as one page of thing_data (its largest); a
 * range holding more is drawn as averages per minute (docs/console.md): more points than that cannot
 * be told apart on a chart, and reading them would cost the page seconds.
 */
const MAX_POINTS = 10_000;

/**
 * How long a live range's read waits for its subscription to be accepted before it is made anyway (it
 * is made again once the subscription is accepted).
 */
const SUBSCRIPTION_WAIT_MS = 2000;

/** The buckets of a crowded raw range: a minute, the width live events are added to. */
const MINUTE = 60;

/** Averages per bucket, with each bucket's sum and count per metric, so that live events can join them. */
interface Averages extends Columns {
  sums: number[][];
  counts: number[][];
}

/** thing_data with data_format=array: rows [timestamp, v1, v2, ...] in the order of `metrics`. */
type ThingDataBlock = { total_event_count: number; metrics: string[]; event_data: [number, ...unknown[]][] };
type ThingDataAnswer = Record<string, ThingDataBlock>;
type AggregatedAnswer = {
  time_grouped_result: Record<string, Record<string, Record<string, { sum: number; count: number }>>>;
};

/** An event's values by the names the chart uses: nested objects as paths with dots (`machine.temp`). */
function valuesOf(data: unknown, prefix = '', into: Record<string, unknown> = {}): Record<string, unknown> {
  if (!data || typeof data !== 'object') return into;
  for (const [name, value] of Object.entries(data)) {
    if (value && typeof value === 'object' && !Array.isArray(value)) valuesOf(value, `${prefix}${name}.`, into);
    else into[`${prefix}${name}`] = value;
  }
  return into;
}

/**
 * Numeric metrics of the range as chart columns; the last hour follows live events. The metrics are
 * the template's when it declares any, as thing_data and thing_aggregated_data answer them, so the
 * chart shows the same live and after a reload (docs/console.md).
 */
export function Telemetry({
  thingKey,
  declared,
  units = {},
  onUndeclared,
}: {
  thingKey: string;
  /** The template's metrics' units, where they have one: metrics of different units get scales of their own. */
  units?: Record<string, string>;
  /** The template's metrics; undefined while the template is being read (the history does not wait for it). */
  declared: string[] | undefined;
  onUndeclared: (metrics: string[]) => void;
}) {
  const [range, setRange] = useState<Range>(FIRST_RANGE);
  const [columns, setColumns] = useState<Columns | undefined>();
  const [grouped, setGrouped] = useState(false);
  // Seconds each average of a grouped range covers, for its caption.
  const [averagedOver, setAveragedOver] = useState(0);
  const [error, setError] = useState<string | undefined>();
  const [count, setCount] = useState(0);
  // The time axis spans the whole range asked for (epoch seconds), not only the events in it.
  const [span, setSpan] = useState<[number, number] | undefined>();
  const chart = useRef<ChartHandle | undefined>(undefined);
  // Live events are filtered by the template as it is when they arrive. The history is read again
  // only when a template already read changes (the Default template learning a metric), not when it
  // first arrives: thing_data and thing_aggregated_data apply it themselves.
  const declaredNow = useRef<string[]>([]);
  declaredNow.current = declared ?? [];
  const declaredKey = declared?.join('\u0000');
  const seenKey = useRef<string | undefined>(undefined);
  const [templateChanges, setTemplateChanges] = useState(0);
  useEffect(() => {
    if (declaredKey === undefined) return;
    if (seenKey.current !== undefined && seenKey.current !== declaredKey) setTemplateChanges((n) => n + 1);
    seenKey.current = declaredKey;
  }, [declaredKey]);
  // The chart's data and the live events' way to it, shared by the range's reads (an effect for each
  // range) and the thing's subscription (one while a live range is shown, whichever: a new range does
  // not renew it, so it is not accepted again, which would read the range a second time).
  const shared = useRef<{
    /** The columns drawn, once read. */
    loaded: Columns | Averages | undefined;
    /** The live events that came while the range is read; undefined when no read is under way. */
    early: Message[] | undefined;
    /** Whether the subscription has been accepted (or refused) since it was asked for. */
    answered: boolean;
    /** Starts the range's read once the subscription is answered: set while a read waits for that. */
    waiting: (() => void) | undefined;
    add: ((message: Message) => void) | undefined;
    readHistory: (() => void) | undefined;
  }>({
    loaded: undefined,
    early: undefined,
    answered: false,
    waiting: undefined,
    add: undefined,
    readHistory: undefined,
  });
  const live = 'live' in range;
  useEffect(() => {
    if (!live) return;
    // Live events are taken from before the history is read, so that none falls between the two; those
    // that arrive first are added once it is there, unless the history already holds them. The history
    // of a live range is read once the subscription is accepted: what the server stored before that is
    // in the read, what it stores after comes live. A read made before (the connection slow to come, or
    // lost: nothing is replayed, docs/realtime.md) is made again when it is accepted, the chart kept
    // meanwhile; one under way then is left for a new one, as it may have been answered from before
    // an event the subscription never saw.
    const state = shared.current;
    state.answered = false;
    const answered = () => {
      state.answered = true;
      const { waiting } = state;
      state.waiting = undefined;
      waiting?.();
      return waiting !== undefined;
    };
    return realtime.subscribe(
      'events',
      { thing_keys: [thingKey] },
      (message) => {
        // Refused: the range is read all the same (the error is the read's to tell, if any).
        if (message.type === 'error') answered();
        if (message.type !== 'event') return;
        const { early, add } = shared.current;
        if (early) early.push(message);
        else add?.(message);
      },
      () => {
        if (answered()) return;
        const { loaded, early, readHistory } = shared.current;
        if (loaded || early !== undefined) readHistory?.();
      },
    );
  }, [thingKey, live]);
  useEffect(() => {
    let current = true;
    // Each read has a number: only the last one's answer is drawn.
    let reads = 0;
    const state = shared.current;
    state.loaded = undefined;
    state.early = undefined;
    const add = (message: Message) => {
      let loaded = state.loaded;
      if (!loaded) return;
      const all = valuesOf(message.data);
      const declared = declaredNow.current;
      const values = declared.length > 0 ? Object.fromEntries(declared.map((metric) => [metric, all[metric]])) : all;
      if (declared.length > 0) {
        const undeclared = Object.keys(all).filter((m) => typeof all[m] === 'number' && !declared.includes(m));
        if (undeclared.length > 0) onUndeclared(undeclared);
      }
      const timestamp = message.timestamp as number;
      // An event older than the range (a device sending late) is not drawn in it.
      if (typeof timestamp !== 'number' || timestamp < Date.now() / 1000 - range.seconds) return;
      const known = loaded.metrics;
      const fresh = Object.keys(values).filter((m) => typeof values[m] === 'number' && !known.includes(m));
      // A metric not seen before: a new chart with a column for it.
      if (fresh.length > 0) {
        loaded = withMetrics(loaded, fresh);
        state.loaded = loaded;
      }
      if ('sums' in loaded) addToBucket(loaded, timestamp, values, range.seconds);
      else insertEvent(loaded, timestamp, values, range.seconds);
      if (fresh.length > 0) setColumns(loaded);
      else chart.current?.draw();
      setCount(loaded.x.length);
    };
    /**
     * Adds the live events that came during the read, those from `after` on (epoch seconds). Those of
     * the second `after` itself may be in the read too: averages cannot tell, and an event stored after
     * the read's query, in the rest of that second, is far likelier than one stored in the few
     * milliseconds before it; events drawn one by one can, and are added unless the read holds them.
     */
    const addEarly = (after: number) => {
      const arrived = state.early ?? [];
      state.early = undefined;
      for (const message of arrived) {
        const timestamp = message.timestamp as number;
        if (timestamp < after) continue;
        const read = state.loaded;
        if (timestamp === after && read && !('sums' in read)) {
          const values = valuesOf(message.data);
          const readValue = (column: number) => {
            const value = values[read.metrics[column] as string];
            return typeof value === 'number' ? value : null;
          };
          if (holdsPoint(read, timestamp, readValue)) continue;
        }
        add(message);
      }
    };
    const readHistory = () => {
      state.early = [];
      const read = ++reads;
      loadColumns(thingKey, range).then(
        (history) => {
          if (!current || read !== reads) return;
          const now = Date.now() / 1000;
          setSpan([now - range.seconds, now]);
          setColumns(history.columns);
          setGrouped(history.grouped);
          setAveragedOver(history.averagedOver);
          setCount(history.columns.x.length);
          setError(undefined);
          const loaded = history.columns;
          state.loaded = loaded;
          // Averages per minute hold the events of the minutes read: only later ones are added.
          addEarly(history.grouped ? history.readUntil : (loaded.x[loaded.x.length - 1] ?? Number.NEGATIVE_INFINITY));
        },
        (failure) => {
          if (!current || read !== reads) return;
          setError(messageOf(failure));
          // The chart shown (if any) goes on taking live events.
          addEarly(Number.NEGATIVE_INFINITY);
        },
      );
    };
    state.add = add;
    state.readHistory = readHistory;
    setColumns(undefined);
    // A live range waits for its subscription's answer, unless the connection is down (it is read
    // again when the connection is back) or slow to answer.
    let slow: ReturnType<typeof setTimeout> | undefined;
    if (!live || state.answered || realtime.state === 'reconnecting') readHistory();
    else {
      state.waiting = readHistory;
      slow = setTimeout(() => {
        if (state.waiting !== readHistory) return;
        state.waiting = undefined;
        readHistory();
      }, SUBSCRIPTION_WAIT_MS);
    }
    return () => {
      current = false;
      clearTimeout(slow);
      if (state.waiting === readHistory) state.waiting = undefined;
      state.add = undefined;
      state.readHistory = undefined;
      state.loaded = undefined;
      state.early = undefined;
    };
  }, [thingKey, range, templateChanges]);
  return (
    <section class="panel" aria-label="Telemetry">
      <h2>Telemetry</h2>
      <Field label="Range">
        {(id) => (
          <select
            id={id}
            value={range.label}
            onChange={(e) => setRange(RANGES.find((r) => r.label === e.currentTarget.value) ?? FIRST_RANGE)}
          >
            {RANGES.map((r) => (
              <option key={r.label} value={r.label}>
                {r.label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {columns && columns.metrics.length > 0 && (
        <Chart columns={columns} handle={chart} span={span} slide={'live' in range} units={units} />
      )}
      {columns && (
        <p class="chart-caption">
          {columns.metrics.length === 0
            ? 'No numeric values in this range.'
            : `${grouped ? `${countOf(count, 'average')} of ${showDuration(averagedOver)}` : countOf(count, 'point')} · ${columns.metrics.join(', ')}`}
        </p>
      )}
    </section>
  );
}

/** Puts an event in time order among the columns, then drops those older than the range. */
function insertEvent(columns: Columns, timestamp: number, values: Record<string, unknown>, seconds: number): void {
  let at = columns.x.length;
  while (at > 0 && (columns.x[at - 1] as number) > timestamp) at--;
  columns.x.splice(at, 0, timestamp);
  columns.metrics.forEach((metric, i) => {
    const value = values[metric];
    columns.ys[i]?.splice(at, 0, typeof value === 'number' ? value : null);
  });
  const start = Date.now() / 1000 - seconds;
  let old = 0;
  while (old < columns.x.length && (columns.x[old] as number) < start) old++;
  if (old > 0) {
    columns.x.splice(0, old);
    for (const y of columns.ys) y.splice(0, old);
  }
}

/**
 * The range's columns: every event of a raw range from thing_data, or averages per bucket from
 * thing_aggregated_data for the long ranges and for a raw range of more than MAX_POINTS events
 * (`grouped`, with the seconds each average covers and the time the averages were read up to: later
 * live events are added to them).
 */
async function loadColumns(
  thingKey: string,
  range: Range,
): Promise<{ columns: Columns | Averages; grouped: boolean; averagedOver: number; readUntil: number }> {
  const to = Math.floor(Date.now() / 1000);
  const from = to - range.seconds;
  if ('grouping' in range) {
    return {
      columns: await loadAverages(thingKey, from, to, range.grouping, range.every),
      grouped: true,
      averagedOver: groupingSeconds(range.grouping, range.every),
      readUntil: to,
    };
  }
  // Oldest first, so that events stored while the page is read come after the last one.
  const page = async (per: number) => {
    const answered = (await answer(
      api.POST('/api/v3/query/thing_data', {
        body: { thing_key: thingKey, from, to, page: 1, per, order: 'asc', data_format: 'array' },
      }),
    )) as unknown as ThingDataAnswer;
    return answered[thingKey] ?? { total_event_count: 0, metrics: [], event_data: [] };
  };
  // The count first (a page of one), so that a crowded range is never read event by event.
  if ((await page(1)).total_event_count > MAX_POINTS) {
    return {
      columns: await loadAverages(thingKey, from, to, 'minute', 1),
      grouped: true,
      averagedOver: 60,
      readUntil: to,
    };
  }
  const block = await page(MAX_POINTS);
  const metrics = block.metrics.filter((_, i) => block.event_data.some((row) => typeof row[i + 1] === 'number'));
  const where = metrics.map((metric) => block.metrics.indexOf(metric) + 1);
  const ys = where.map((i) =>
    block.event_data.map((row) => {
      const value = row[i];
      return typeof value === 'number' ? value : null;
    }),
  );
  return {
    columns: { metrics, x: block.event_data.map((row) => row[0]), ys },
    grouped: false,
    averagedOver: 0,
    readUntil: to,
  };
}

async function loadAverages(
  thingKey: string,
  from: number,
  to: number,
  grouping: 'minute' | 'hour',
  every: number,
): Promise<Averages> {
  const answered = (await answer(
    api.POST('/api/v3/query/thing_aggregated_data', {
      body: {
        thing_keys: [thingKey],
        from,
        to,
        time_grouping: grouping,
        time_grouping_value: every,
        functions: ['avg'],
      },
    }),
  )) as unknown as AggregatedAnswer;
  const buckets = Object.entries(answered.time_grouped_result ?? {});
  // The metrics with a value in the range, as a raw range shows them (the answer has every metric asked for).
  const metrics = [...new Set(buckets.flatMap(([, things]) => Object.keys(things[thingKey] ?? {})))]
    .filter((metric) => buckets.some(([, things]) => (things[thingKey]?.[metric]?.count ?? 0) > 0))
    .sort();
  const sums = metrics.map((metric) => buckets.map(([, things]) => things[thingKey]?.[metric]?.sum ?? 0));
  const counts = metrics.map((metric) => buckets.map(([, things]) => things[thingKey]?.[metric]?.count ?? 0));
  return {
    metrics,
    x: buckets.map(([start]) => Number(start)),
    ys: metrics.map((_, m) => buckets.map((_, b) => averageOf(sums[m]?.[b] ?? 0, counts[m]?.[b] ?? 0))),
    sums,
    counts,
  };
}

const averageOf = (sum: number, count: number): number | null => (count === 0 ? null : sum / count);

/** The same columns with empty ones for metrics they did not have. */
function withMetrics<C extends Columns | Averages>(columns: C, fresh: string[]): C {
  const empty = <T,>(value: T) => fresh.map(() => columns.x.map(() => value));
  const more = { metrics: [...columns.metrics, ...fresh], x: columns.x, ys: [...columns.ys, ...empty(null)] };
  if (!('sums' in columns)) return more as C;
  return { ...more, sums: [...columns.sums, ...empty(0)], counts: [...columns.counts, ...empty(0)] } as C;
}

/** Adds an event to the average of its minute (a new bucket where none is), then drops minutes older than the range. */
function addToBucket(averages: Averages, timestamp: number, values: Record<string, unknown>, seconds: number) {
  const start = Math.floor(timestamp / MINUTE) * MINUTE;
  let at = averages.x.length;
  while (at > 0 && (averages.x[at - 1] as number) > start) at--;
  if (averages.x[at - 1] === start) at--;
  else {
    averages.x.splice(at, 0, start);
    averages.metrics.forEach((_, m) => {
      averages.ys[m]?.splice(at, 0, null);
      averages.sums[m]?.splice(at, 0, 0);
      averages.counts[m]?.splice(at, 0, 0);
    });
  }
  averages.metrics.forEach((metric, m) => {
    const value = values[metric];
    const sums = averages.sums[m];
    const counts = averages.counts[m];
    const ys = averages.ys[m];
    if (typeof value !== 'number' || !sums || !counts || !ys) return;
    sums[at] = (sums[at] ?? 0) + value;
    counts[at] = (counts[at] ?? 0) + 1;
    ys[at] = averageOf(sums[at] as number, counts[at] as number);
  });
  let old = 0;
  while (old < averages.x.length && (averages.x[old] as number) + MINUTE <= Date.now() / 1000 - seconds) old++;
  if (old > 0) {
    averages.x.splice(0, old);
    for (const column of [...averages.ys, ...averages.sums, ...averages.counts]) column.splice(0, old);
  }
}
