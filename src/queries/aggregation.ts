/**
 * `thing_aggregated_data` (CONTRACT 10): count, sum, min, max and avg of numeric metrics over a
 * period, for all things together, per thing, and per calendar-aligned time bucket, with idle time.
 */
import { requiredParam } from '../core/errors.ts';
import type { TimeFormatter } from '../core/time.ts';
import { type MetricStats, SLOT_MS } from '../events/rollups.ts';
import { readPath } from '../expressions/index.ts';
import type { Executor } from '../store/store.ts';
import { type EventTriple, eventChunks, rollupsOf } from './repository.ts';
import { readBound } from './thing-data.ts';
import { queriedThings } from './things.ts';
import { type TimeGrouping, timeBuckets } from './time-buckets.ts';

export type AggregateFunction = 'avg' | 'min' | 'max' | 'sum' | 'count';

export interface AggregationRequest {
  organisationKeys: string[];
  thingKeys?: string[] | undefined;
  grouping?: TimeGrouping | undefined;
  groupingValue: number;
  idle: boolean;
  from?: string | number | undefined;
  to?: string | number | undefined;
  metrics?: string[] | undefined;
  functions?: AggregateFunction[] | undefined;
}

class Accumulator {
  count = 0;
  sum = 0;
  min: number | null = null;
  max: number | null = null;
  /** Event times (ms) where the metric had a value, for idle time. */
  times: number[] = [];

  add(value: number, at: number, keepTimes: boolean): void {
    this.count += 1;
    this.sum += value;
    if (this.min === null || value < this.min) this.min = value;
    if (this.max === null || value > this.max) this.max = value;
    if (keepTimes) this.times.push(at);
  }

  /** A slot's counts (events/rollups.ts) added at once. */
  merge([count, sum, min, max]: MetricStats): void {
    if (count === 0) return;
    this.count += count;
    this.sum += sum;
    if (min !== null && (this.min === null || min < this.min)) this.min = min;
    if (max !== null && (this.max === null || max > this.max)) this.max = max;
  }
}

/** Far beyond any event time: the open ends of a range read from rollups. */
const FAR = 8.64e15;

/**
 * Which part of the range can be read from slot rollups: the whole slots inside it, when every bucket
 * boundary within them falls on a slot boundary and idle time (which needs each event's time) is not
 * asked for. The events of the partial slots at either end (`rest`, inclusive bounds) are read one by one.
 */
export function rollupPlan(
  from: number | undefined,
  to: number | undefined,
  buckets: { starts: readonly number[] } | undefined,
  idle: boolean,
): { from: number; to: number; rest: { from: number | undefined; to: number | undefined }[] } | undefined {
  if (idle) return undefined;
  const first = from === undefined ? -FAR : Math.ceil(from / SLOT_MS) * SLOT_MS;
  const end = to === undefined ? FAR : Math.floor((Math.floor(to) + 1) / SLOT_MS) * SLOT_MS;
  if (end <= first) return undefined;
  if (buckets?.starts.some((b) => b > first && b < end && b % SLOT_MS !== 0)) return undefined;
  const rest: { from: number | undefined; to: number | undefined }[] = [];
  if (from !== undefined && from < first) rest.push({ from, to: first - 1 });
  if (to !== undefined && Math.floor(to) + 1 > end) rest.push({ from: end, to });
  return { from: first, to: end, rest };
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

export async function aggregatedData(db: Executor, request: AggregationRequest, time: TimeFormatter) {
  const from = readBound(request.from, time.zone, 'from');
  const to = readBound(request.to, time.zone, 'to', true);
  if ((request.grouping || request.idle) && from === undefined) throw requiredParam('from');
  if ((request.grouping || request.idle) && to === undefined) throw requiredParam('to');
  const things = await queriedThings(db, request.organisationKeys, request.thingKeys);
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

  const discovered = new Set<string>();
  for (const thing of things) for (const m of thing.metrics) if (m.data_type === 'number') discovered.add(m.name);
  const metrics = request.metrics ?? [...discovered];

  const present = (acc: Accumulator, period: Period | undefined, idleMs: number) => {
    const out: Record<string, number | null> = {};
    if (functions.has('count')) out.count = acc.count;
    if (functions.has('sum')) out.sum = acc.sum;
    if (functions.has('min')) out.min = acc.min;
    if (functions.has('max')) out.max = acc.max;
    if (functions.has('avg')) out.avg = acc.count > 0 ? acc.sum / acc.count : null;
    if (request.idle && period) {
      out.idle_time_mins = idleMinutes(acc.times, period, idleMs);
      out.total_time_mins = minutes(period);
    }
    return out;
  };

  const whole: Period | undefined = from !== undefined && to !== undefined ? { start: from, end: to } : undefined;
  const summary: Record<string, Record<string, number | null>> = {};
  const summaryTotals = new Map<string, { acc: Accumulator; idle: number; total: number }>();
  const thingWise: Record<string, Record<string, Record<string, number | null>>> = {};
  const grouped: Record<string, Record<string, Record<string, Record<string, number | null>>>> = {};
  const bucketKeys = buckets ? buckets.keys(time) : [];
  for (const key of bucketKeys) grouped[key] = {};

  const paths = metrics.map((metric) => metric.split('.'));
  const plan = rollupPlan(from, to, buckets, request.idle);
  for (const thing of things) {
    const thingKey = thing.thing_key;
    const idleMs = thing.idle_timeout * 1000;
    thingWise[thingKey] = {};
    const accs = metrics.map(() => new Accumulator());
    const bucketAccs = metrics.map(() =>
      buckets ? Array.from({ length: buckets.length }, () => new Accumulator()) : [],
    );
    const addEvents = (chunk: EventTriple[]) => {
      for (const [at, , data] of chunk) {
        const index = buckets ? buckets.indexOf(at) : -1;
        for (let m = 0; m < paths.length; m++) {
          const value = readPath(data, paths[m] as string[]);
          if (typeof value !== 'number' || !Number.isFinite(value)) continue;
          (accs[m] as Accumulator).add(value, at, request.idle);
          if (index >= 0) (bucketAccs[m] as Accumulator[])[index]?.add(value, at, request.idle);
        }
      }
    };
    // Whole slots from their rollups when every one covers every metric asked for; the rest event by event.
    const slots = plan ? await rollupsOf(db, thing.thing_id, plan.from, plan.to) : [];
    const covered = plan && slots.every(([, stats]) => metrics.every((metric) => Object.hasOwn(stats, metric)));
    if (plan && covered) {
      for (const [slot, stats] of slots) {
        const index = buckets ? buckets.indexOf(slot) : -1;
        for (let m = 0; m < metrics.length; m++) {
          const counted = stats[metrics[m] as string] as MetricStats;
          (accs[m] as Accumulator).merge(counted);
          if (index >= 0) (bucketAccs[m] as Accumulator[])[index]?.merge(counted);
        }
      }
    }
    const ranges = plan && covered ? plan.rest : [{ from, to }];
    for (const range of ranges) {
      const events = { thingId: thing.thing_id, from: range.from, to: range.to, byCreatedAt: false };
      for await (const chunk of eventChunks(db, events)) addEvents(chunk);
    }
    for (const [m, metric] of metrics.entries()) {
      const acc = accs[m] as Accumulator;
      const presented = present(acc, whole, idleMs);
      (thingWise[thingKey] as Record<string, unknown>)[metric] = presented;
      const total = summaryTotals.get(metric) ?? { acc: new Accumulator(), idle: 0, total: 0 };
      total.acc.count += acc.count;
      total.acc.sum += acc.sum;
      if (acc.min !== null && (total.acc.min === null || acc.min < total.acc.min)) total.acc.min = acc.min;
      if (acc.max !== null && (total.acc.max === null || acc.max > total.acc.max)) total.acc.max = acc.max;
      total.idle += Number(presented.idle_time_mins ?? 0);
      total.total += Number(presented.total_time_mins ?? 0);
      summaryTotals.set(metric, total);
      if (buckets) {
        bucketKeys.forEach((key, i) => {
          const period = { start: buckets.starts[i] as number, end: buckets.ends[i] as number };
          const forBucket = grouped[key] as Record<string, Record<string, Record<string, number | null>>>;
          forBucket[thingKey] ??= {};
          (forBucket[thingKey] as Record<string, unknown>)[metric] = present(
            (bucketAccs[m] as Accumulator[])[i] as Accumulator,
            period,
            idleMs,
          );
        });
      }
    }
  }
  for (const metric of metrics) {
    const total = summaryTotals.get(metric) ?? { acc: new Accumulator(), idle: 0, total: 0 };
    const presented = present(total.acc, undefined, 0);
    if (request.idle && whole) {
      // Across things: the idle and total minutes of every thing added up.
      presented.idle_time_mins = Math.round(total.idle * 100) / 100;
      presented.total_time_mins = Math.round(total.total * 100) / 100;
    }
    summary[metric] = presented;
  }
  return {
    summary_result: summary,
    thing_wise_result: thingWise,
    ...(buckets ? { time_grouped_result: grouped } : {}),
  };
}
