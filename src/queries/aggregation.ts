/**
 * `thing_aggregated_data` (docs/api.md, "Data queries"): count, sum, min, max and avg of numeric
 * metrics over a period, for all things together, per thing, and per calendar-aligned time bucket, with
 * idle time.
 */
import { invalidParam } from '../core/errors.ts';
import { JsonText } from '../core/http/json-text.ts';
import type { TimeFormatter } from '../core/time.ts';
import { rollupsOf, SLOT_MS } from '../events/rollups.ts';
import { type EventTriple, eventChunks, firstKeptSlot, retentionCuts } from '../events/service.ts';
import { readPath } from '../expressions/index.ts';
import type { Executor } from '../store/store.ts';
import { readBound } from './thing-data.ts';
import { namedThingKeys, namedThingsParam, type QueriedThing, queriedThings } from './things.ts';
import { MAX_BUCKETED_INSTANT, type TimeBuckets, type TimeGrouping, timeBuckets } from './time-buckets.ts';

export type AggregateFunction = 'avg' | 'min' | 'max' | 'sum' | 'count';

export interface AggregationRequest {
  organisationKeys: string[];
  thingKeys?: string[] | undefined;
  /** A shorthand for thingKeys: [thingKey]. */
  thingKey?: string | undefined;
  grouping?: TimeGrouping | undefined;
  groupingValue: number;
  idle: boolean;
  from?: string | number | undefined;
  to?: string | number | undefined;
  metrics?: string[] | undefined;
  functions?: AggregateFunction[] | undefined;
}

/**
 * Count, sum, min and max of one metric in a row of cells (the whole period, or one per bucket), in
 * typed arrays: an aggregation over thousands of buckets allocates no object per bucket. NaN stands
 * for "no value yet" in min and max.
 */
export class Stats {
  readonly count: Float64Array;
  readonly sum: Float64Array;
  readonly min: Float64Array;
  readonly max: Float64Array;
  /** Event times (ms) per cell where the metric had a value, kept only for idle time. */
  readonly times: number[][] | undefined;

  constructor(cells: number, keepTimes: boolean) {
    this.count = new Float64Array(cells);
    this.sum = new Float64Array(cells);
    this.min = new Float64Array(cells).fill(Number.NaN);
    this.max = new Float64Array(cells).fill(Number.NaN);
    this.times = keepTimes ? Array.from({ length: cells }, () => []) : undefined;
  }

  add(cell: number, value: number, at: number): void {
    this.count[cell] = (this.count[cell] as number) + 1;
    this.sum[cell] = (this.sum[cell] as number) + value;
    if (!(value >= (this.min[cell] as number))) this.min[cell] = value;
    if (!(value <= (this.max[cell] as number))) this.max[cell] = value;
    this.times?.[cell]?.push(at);
  }

  /** Another Stats' cell added to a cell of this one. */
  addCell(cell: number, from: Stats, fromCell: number): void {
    const count = from.count[fromCell] as number;
    // A cell with a count has a min and a max.
    if (count > 0)
      this.merge(cell, count, from.sum[fromCell] as number, from.min[fromCell] as number, from.max[fromCell] as number);
  }

  /**
   * A slot's counts (events/rollups.ts) added at once; a sum of null is one past the largest double,
   * which makes this one no number (answered null) for good.
   */
  merge(cell: number, count: number, sum: number | null, min: number | null, max: number | null): void {
    if (count === 0) return;
    this.count[cell] = (this.count[cell] as number) + count;
    this.sum[cell] = (this.sum[cell] as number) + (sum ?? Number.NaN);
    if (min !== null && !(min >= (this.min[cell] as number))) this.min[cell] = min;
    if (max !== null && !(max <= (this.max[cell] as number))) this.max[cell] = max;
  }
}

/** Far beyond any event time: the open ends of a range read from rollups. */
const FAR = 8.64e15;

/**
 * Which part of the range can be read from slot rollups: the whole slots inside it. `stored`: they may
 * stand for its stored events too, when every bucket boundary within them falls on a slot boundary
 * (`alignedBuckets`) and idle time (which needs each event's time) is not asked for; the events of the
 * partial slots at either end (`rest`, inclusive bounds) are then read one by one. Otherwise only the
 * slots whose events have expired are read from rollups, into the buckets only when they are aligned:
 * `summary_result` and `thing_wise_result` cover the whole range (docs/storage.md, "Retention").
 */
export function rollupPlan(
  from: number | undefined,
  to: number | undefined,
  buckets: { starts: readonly number[] } | undefined,
  idle: boolean,
):
  | {
      from: number;
      to: number;
      rest: { from: number | undefined; to: number | undefined }[];
      alignedBuckets: boolean;
      stored: boolean;
    }
  | undefined {
  const first = from === undefined ? -FAR : Math.ceil(from / SLOT_MS) * SLOT_MS;
  const end = to === undefined ? FAR : Math.floor((Math.floor(to) + 1) / SLOT_MS) * SLOT_MS;
  if (end <= first) return undefined;
  const alignedBuckets = !buckets?.starts.some((b) => b > first && b < end && b % SLOT_MS !== 0);
  const rest: { from: number | undefined; to: number | undefined }[] = [];
  if (from !== undefined && from < first) rest.push({ from, to: first - 1 });
  if (to !== undefined && Math.floor(to) + 1 > end) rest.push({ from: end, to });
  return { from: first, to: end, rest, alignedBuckets, stored: alignedBuckets && !idle };
}

interface Period {
  start: number;
  end: number;
}

/** Minutes of every gap longer than `idleTimeoutMs` without an event, whole gaps counted. */
export function idleMinutes(times: number[], period: Period, idleTimeoutMs: number): number {
  let idle = 0;
  let previous = period.start;
  for (const at of [...times, period.end]) {
    const gap = at - previous;
    if (gap > idleTimeoutMs) idle += gap;
    previous = Math.max(previous, at);
  }
  return Math.round((idle / 60_000) * 100) / 100;
}

const minutes = (period: Period) => Math.round(((period.end - period.start) / 60_000) * 100) / 100;

/** A finite number as JSON writes it; what JSON.stringify writes for Infinity and NaN otherwise. */
const numberJson = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

interface IdleTimes {
  idle: number;
  total: number;
}

/** Minutes added up over buckets or things, to the hundredth as each of them is. */
const roundedMinutes = (sums: IdleTimes): IdleTimes => ({
  idle: Math.round(sums.idle * 100) / 100,
  total: Math.round(sums.total * 100) / 100,
});

/** Writes one cell's members, in the order the answer always had: count, sum, min, max, avg, idle. */
export function cellWriter(functions: ReadonlySet<AggregateFunction>) {
  const [withCount, withSum, withMin, withMax, withAvg] = (['count', 'sum', 'min', 'max', 'avg'] as const).map((f) =>
    functions.has(f),
  );
  return (stats: Stats, cell: number, idleTimes?: IdleTimes): string => {
    const count = stats.count[cell] as number;
    const sum = stats.sum[cell] as number;
    let json = '';
    if (withCount) json += `,"count":${count}`;
    if (withSum) json += `,"sum":${numberJson(sum)}`;
    if (withMin) json += `,"min":${numberJson(stats.min[cell] as number)}`;
    if (withMax) json += `,"max":${numberJson(stats.max[cell] as number)}`;
    if (withAvg) json += `,"avg":${count > 0 ? numberJson(sum / count) : 'null'}`;
    if (idleTimes) json += `,"idle_time_mins":${idleTimes.idle},"total_time_mins":${idleTimes.total}`;
    return `{${json.slice(1)}}`;
  };
}

const HOUR_MS = 3_600_000;
/**
 * The period of an aggregation by time, or of idle time, whose `from` is not given: the last hour of
 * minutes, day of hours, 30 days of days, 365 days of months, and a day of idle time.
 */
const DEFAULT_SPAN_MS: Record<TimeGrouping | 'idle', number> = {
  minute: HOUR_MS,
  hour: 24 * HOUR_MS,
  day: 30 * 24 * HOUR_MS,
  month: 365 * 24 * HOUR_MS,
  idle: 24 * HOUR_MS,
};

/** What an aggregation request asks for, checked: its range, its buckets and the functions to answer. */
export function aggregationRange(
  request: Pick<AggregationRequest, 'from' | 'to' | 'grouping' | 'groupingValue' | 'idle' | 'functions'>,
  time: TimeFormatter,
) {
  let from = readBound(request.from, time.zone, 'from');
  let to = readBound(request.to, time.zone, 'to', true);
  // Buckets and idle time need a period: one not given ends now and spans DEFAULT_SPAN_MS (docs/api.md,
  // "Data queries").
  if (request.grouping || request.idle) {
    const now = Date.now();
    to ??= Math.max(now, from ?? now);
    from ??= to - DEFAULT_SPAN_MS[request.grouping ?? 'idle'];
  }
  if (from !== undefined && to !== undefined && from > to) throw invalidParam('from', 'must not be after to');
  if (request.grouping) {
    // Buckets are walked by the calendar a little beyond the range: the last days a clock can name
    // (docs/api.md, "Data queries") are too near the end of the calendar for that.
    for (const [param, at] of [
      ['from', from],
      ['to', to],
    ] as const) {
      if (Math.abs(at as number) > MAX_BUCKETED_INSTANT) {
        throw invalidParam(
          param,
          `is too far from 1970 to group by time (at most ${MAX_BUCKETED_INSTANT / 1000} seconds)`,
        );
      }
    }
  }
  const buckets = request.grouping
    ? timeBuckets({
        from: from as number,
        to: to as number,
        grouping: request.grouping,
        size: request.groupingValue,
        zone: time.zone,
      })
    : undefined;
  const functions = new Set<AggregateFunction>(
    request.functions?.length ? request.functions : ['avg', 'min', 'max', 'sum', 'count'],
  );
  if (functions.has('avg')) {
    functions.add('sum');
    functions.add('count');
  }
  return { from, to, buckets, functions };
}

/**
 * The buckets by the key that names them in `time_grouped_result`. A wall-clock key the clock reads
 * twice (the hour repeated when it falls back) names every bucket that starts at it, counted together:
 * no event is left out of the grouped answer.
 */
export function keyedBuckets(buckets: TimeBuckets, time: TimeFormatter): Map<string, number[]> {
  const keys = buckets.keys(time);
  const bucketsOfKey = new Map<string, number[]>();
  for (let i = 0; i < keys.length; i++) {
    const same = bucketsOfKey.get(keys[i] as string);
    if (same) same.push(i);
    else bucketsOfKey.set(keys[i] as string, [i]);
  }
  return bucketsOfKey;
}

/** What one thing's stats are counted over (aggregatedData). */
export interface ThingStatsRequest {
  from: number | undefined;
  to: number | undefined;
  buckets: TimeBuckets | undefined;
  plan: ReturnType<typeof rollupPlan>;
  metrics: string[];
  idle: boolean;
  now: number;
}

/** Adds a thing's stored events in these ranges (inclusive bounds) to its stats, overall and per bucket. */
export async function addEventsOfThing(
  db: Executor,
  thingId: number,
  ranges: { from: number | undefined; to: number | undefined }[],
  notBefore: number | undefined,
  target: { metrics: string[]; buckets: TimeBuckets | undefined; overall: Stats[]; bucketed: Stats[] },
): Promise<void> {
  const { buckets, overall, bucketed } = target;
  const paths = target.metrics.map((metric) => metric.split('.'));
  const addEvents = (chunk: EventTriple[]) => {
    for (const [at, , data] of chunk) {
      const index = buckets ? buckets.indexOf(at) : -1;
      for (let m = 0; m < paths.length; m++) {
        const value = readPath(data, paths[m] as string[]);
        if (typeof value !== 'number' || !Number.isFinite(value)) continue;
        (overall[m] as Stats).add(0, value, at);
        if (index >= 0) (bucketed[m] as Stats).add(index, value, at);
      }
    }
  };
  for (const range of ranges) {
    const events = { thingId, from: range.from, to: range.to, byCreatedAt: false, notBefore };
    for await (const chunk of eventChunks(db, events)) addEvents(chunk);
  }
}

/** One thing's stats of each metric, overall and per bucket: from its rollups where they serve, else its events. */
export async function statsOfThing(db: Executor, thing: QueriedThing, request: ThingStatsRequest) {
  const { from, to, buckets, plan, metrics, idle, now } = request;
  const overall = metrics.map(() => new Stats(1, idle));
  const bucketed = buckets ? metrics.map(() => new Stats(buckets.length, idle)) : [];
  // Whole slots from their rollups when every one covers every metric asked for; the rest event by event.
  // Under retention (docs/storage.md), expired events are never read: the whole slots before they
  // expire are answered from the rollups still kept (whatever the buckets: the summary and per-thing
  // results cover the whole range), and the rest of the expired part counts nothing.
  const cuts = retentionCuts(thing.retention_days, thing.rollup_retention_days, now);
  const expiredBefore = cuts.events ?? -FAR;
  let slots: Awaited<ReturnType<typeof rollupsOf>> = [];
  if (plan) {
    const slotsFrom = Math.max(plan.from, firstKeptSlot(cuts.rollups) ?? -FAR);
    // Standing for the stored events too, or only the slots whose events have all expired.
    const slotsTo = plan.stored ? plan.to : Math.min(plan.to, Math.floor(expiredBefore / SLOT_MS) * SLOT_MS);
    if (slotsFrom < slotsTo) slots = await rollupsOf(db, thing.thing_id, slotsFrom, slotsTo);
  }
  const covered = plan?.stored && slots.every(([, stats]) => metrics.every((metric) => Object.hasOwn(stats, metric)));
  for (const [slot, stats] of slots) {
    // Not covered: only the slots whose events have all expired, with the metrics they have.
    if (!covered && slot + SLOT_MS > expiredBefore) continue;
    const index = buckets && plan?.alignedBuckets ? buckets.indexOf(slot) : -1;
    for (let m = 0; m < metrics.length; m++) {
      const metric = stats[metrics[m] as string];
      if (metric === undefined) continue;
      const [count, sum, min, max] = metric;
      (overall[m] as Stats).merge(0, count, sum, min, max);
      if (index >= 0) (bucketed[m] as Stats).merge(index, count, sum, min, max);
    }
  }
  const ranges = plan && covered ? plan.rest : [{ from, to }];
  await addEventsOfThing(db, thing.thing_id, ranges, cuts.events, { metrics, buckets, overall, bucketed });
  return { overall, bucketed };
}

/**
 * The most cells (a thing's, or the fleet's, numbers of one metric over the whole range or in one
 * bucket) an aggregation answers: about a hundred bytes of JSON each, written on the server's thread.
 * Past it, an answer of hundreds of megabytes would hold the thread for seconds and its memory, or
 * fail past the longest string the runtime makes (docs/api.md, "Data queries").
 */
export const MAX_ANSWER_CELLS = 250_000;

/** Refuses an answer of more cells than MAX_ANSWER_CELLS, before anything is read. */
export function checkAnswerCells(things: number, metrics: number, buckets: TimeBuckets | undefined): void {
  const cells = things * metrics * ((buckets?.length ?? 0) + 1);
  if (cells <= MAX_ANSWER_CELLS) return;
  throw invalidParam(
    buckets ? 'time_grouping' : 'metrics',
    `would answer ${cells} cells (${things === 1 ? '' : `${things} things, `}${metrics} metrics${buckets ? `, ${buckets.length} buckets` : ''}); at most ${MAX_ANSWER_CELLS} are: ask for fewer things or metrics, or narrow from/to or group coarser`,
  );
}

/**
 * The answer, written as JSON text as it is computed: a month of 15-minute buckets is close to a
 * megabyte of JSON, and building it as nested objects first cost more than all the rest.
 */
export async function aggregatedData(
  db: Executor,
  request: AggregationRequest,
  time: TimeFormatter,
): Promise<JsonText> {
  const thingKeys = namedThingKeys(request.thingKeys, request.thingKey);
  const { from, to, buckets, functions } = aggregationRange(request, time);
  const things = await queriedThings(
    db,
    request.organisationKeys,
    thingKeys,
    undefined,
    namedThingsParam(request.thingKeys),
  );

  const discovered = new Set<string>();
  for (const thing of things) for (const m of thing.metrics) if (m.data_type === 'number') discovered.add(m.name);
  const metrics = [...new Set(request.metrics ?? discovered)];
  const metricNames = metrics.map((metric) => JSON.stringify(metric));
  const idle = request.idle;
  checkAnswerCells(things.length, metrics.length, buckets);

  const cellJson = cellWriter(functions);
  /** Buckets sharing a key as one cell: their counts merged, their idle and total minutes added up. */
  const sharedKeyCellJson = (stats: Stats, indices: number[], idleOfBucket: (i: number) => IdleTimes | undefined) => {
    const merged = new Stats(1, false);
    const minutesSum: IdleTimes = { idle: 0, total: 0 };
    let withIdle = false;
    for (const i of indices) {
      merged.addCell(0, stats, i);
      const bucketIdle = idleOfBucket(i);
      if (bucketIdle) {
        withIdle = true;
        minutesSum.idle += bucketIdle.idle;
        minutesSum.total += bucketIdle.total;
      }
    }
    return cellJson(merged, 0, withIdle ? roundedMinutes(minutesSum) : undefined);
  };
  const idleOf = (stats: Stats, cell: number, period: Period, idleMs: number): IdleTimes => ({
    idle: idleMinutes(stats.times?.[cell] ?? [], period, idleMs),
    total: minutes(period),
  });

  // Idle and total minutes are counted to the instant `to` names (00:30:00 ends a half hour), though
  // the events of that whole second are in the range; a `to` not given is the instant the period ends.
  const named = readBound(request.to, time.zone, 'to') ?? to;
  const whole: Period | undefined = from !== undefined && named !== undefined ? { start: from, end: named } : undefined;
  const totals = metrics.map(() => new Stats(1, false));
  const idleTotals = metrics.map((): IdleTimes => ({ idle: 0, total: 0 }));
  const thingWise: string[] = [];
  /** Per thing, per metric: its stats in every bucket, written out bucket by bucket at the end. */
  const perBucket: { thingName: string; idleMs: number; stats: Stats[] }[] = [];

  const plan = rollupPlan(from, to, buckets, idle);
  const now = Date.now();
  for (const thing of things) {
    const idleMs = thing.idle_timeout * 1000;
    const { overall, bucketed } = await statsOfThing(db, thing, { from, to, buckets, plan, metrics, idle, now });
    const members: string[] = [];
    for (let m = 0; m < metrics.length; m++) {
      const stats = overall[m] as Stats;
      const idleTimes = idle && whole ? idleOf(stats, 0, whole, idleMs) : undefined;
      members.push(`${metricNames[m]}:${cellJson(stats, 0, idleTimes)}`);
      (totals[m] as Stats).addCell(0, stats, 0);
      if (idleTimes) {
        const sums = idleTotals[m] as IdleTimes;
        sums.idle += idleTimes.idle;
        sums.total += idleTimes.total;
      }
    }
    const thingName = JSON.stringify(thing.thing_key);
    thingWise.push(`${thingName}:{${members.join(',')}}`);
    perBucket.push({ thingName, idleMs, stats: bucketed });
  }

  const summary = metrics.map((_, m) => {
    // Across things: the idle and total minutes of every thing added up.
    const sums = idleTotals[m] as IdleTimes;
    const idleTimes = idle && whole ? roundedMinutes(sums) : undefined;
    return `${metricNames[m]}:${cellJson(totals[m] as Stats, 0, idleTimes)}`;
  });
  let text = `{"summary_result":{${summary.join(',')}},"thing_wise_result":{${thingWise.join(',')}}`;
  if (buckets) {
    text += ',"time_grouped_result":{';
    const bucketsOfKey = keyedBuckets(buckets, time);
    const periodOf = (i: number): Period => ({ start: buckets.starts[i] as number, end: buckets.ends[i] as number });
    let firstBucket = true;
    for (const [key, indices] of bucketsOfKey) {
      const [first] = indices as [number];
      let members = '';
      for (const { thingName, idleMs, stats } of perBucket) {
        let cells = '';
        for (let m = 0; m < metrics.length; m++) {
          const s = stats[m] as Stats;
          const cell =
            indices.length === 1
              ? cellJson(s, first, idle ? idleOf(s, first, periodOf(first), idleMs) : undefined)
              : sharedKeyCellJson(s, indices, (j) => (idle ? idleOf(s, j, periodOf(j), idleMs) : undefined));
          cells += `,${metricNames[m]}:${cell}`;
        }
        members += `,${thingName}:{${cells.slice(1)}}`;
      }
      text += `${firstBucket ? '' : ','}${JSON.stringify(key)}:{${members.slice(1)}}`;
      firstBucket = false;
    }
    text += '}';
  }
  return new JsonText(`${text}}`);
}
