/**
 * `thing_data` (docs/api.md, "Data queries"): a page of a thing's events, newest first by default, as
 * maps or as rows in the order of `metrics`.
 */
import { invalidParam } from '../core/errors.ts';
import { parseDateTime, type TimeFormatter } from '../core/time.ts';
import { type EventRange, pageOfEvents, retentionCuts } from '../events/service.ts';
import { pageOffset } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import { metricValue, pickMetrics } from './metrics.ts';
import { queriedThings } from './things.ts';

export interface ThingDataRequest {
  organisationKeys: string[];
  thingKey?: string | undefined;
  from?: string | number | undefined;
  to?: string | number | undefined;
  page: number;
  per: number;
  order: 'asc' | 'desc';
  metrics?: string[] | undefined;
  dataFormat: 'map' | 'array';
  byCreatedAt: boolean;
}

/** A `from`/`to` value as epoch ms, read in the request's zone; a 400 when unreadable. */
export function readBound(
  value: string | number | undefined,
  zone: string,
  param: string,
  end = false,
): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = parseDateTime(value, zone);
  if (ms === undefined) throw invalidParam(param, 'must be yyyy/mm/dd hh:mm:ss, yyyy-mm-dd hh:mm:ss or epoch seconds');
  // `to` is inclusive to the end of the second it names; a time given with a fraction of a second is
  // that instant (docs/api.md, "Data queries").
  return end && !hasFraction(value) ? ms + 999 : ms;
}

/** Whether a time names a fraction of a second: epoch seconds with decimals, or a time with `ss.SSS`. */
const hasFraction = (value: string | number): boolean =>
  typeof value === 'number' ? !Number.isInteger(value) : /\.\d|:\d\d,\d/.test(value);

export async function thingData(db: Executor, request: ThingDataRequest, time: TimeFormatter) {
  const from = readBound(request.from, time.zone, 'from');
  const to = readBound(request.to, time.zone, 'to', true);
  if (from !== undefined && to !== undefined && from > to) throw invalidParam('from', 'must not be after to');
  const things = await queriedThings(
    db,
    request.organisationKeys,
    request.thingKey === undefined ? undefined : [request.thingKey],
  );
  const answer: Record<string, unknown> = {};
  const now = Date.now();
  for (const thing of things) {
    const range: EventRange = {
      thingId: thing.thing_id,
      from,
      to,
      byCreatedAt: request.byCreatedAt,
      notBefore: retentionCuts(thing.retention_days, null, now).events,
    };
    const { total, events } = await pageOfEvents(
      db,
      range,
      request.order,
      request.per,
      pageOffset(request.page, request.per),
    );
    const datas = events.map((e) => JSON.parse(e.data) as Record<string, unknown>);
    const entry: Record<string, unknown> = { total_event_count: total, page_number: String(request.page) };
    if (request.dataFormat === 'array') {
      const metrics =
        request.metrics ??
        columnsOf(
          thing.metrics.map((m) => m.name),
          datas,
        );
      entry.metrics = metrics;
      entry.event_data = events.map((e, i) => [
        time(e.timestamp),
        ...metrics.map((m) => metricValue(datas[i] as Record<string, unknown>, m)),
      ]);
    } else {
      entry.event_data = events.map((e, i) => ({
        timestamp: time(e.timestamp),
        data: request.metrics ? pickMetrics(datas[i] as Record<string, unknown>, request.metrics) : datas[i],
      }));
    }
    answer[thing.thing_key] = entry;
  }
  return answer;
}

/** Columns of array rows without `metrics`: the template's metrics, else every top-level name seen. */
function columnsOf(templateMetrics: string[], datas: Record<string, unknown>[]): string[] {
  if (templateMetrics.length > 0) return templateMetrics;
  return [...new Set(datas.flatMap((d) => Object.keys(d)))].sort();
}
