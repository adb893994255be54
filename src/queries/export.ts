/**
 * Export of a thing's events (docs/api.md, "Exporting events"): every event of a range in time order,
 * as NDJSON or CSV, streamed. The events are read a page at a time, each page after the last one's
 * (time, id), and a page is read only when the client has taken what came before: the answer is a
 * Readable stream, which the server pipes to the socket, so a slow client slows the reads and one that
 * disconnects ends them. Memory holds one page whatever the range. Between pages other work gets its
 * turn (events/repository.ts, eventChunks), also when the client takes every page at once.
 */
import { Readable } from 'node:stream';
import { invalidParam } from '../core/errors.ts';
import type { TimeFormatter } from '../core/time.ts';
import { byTimeThenId, type EventRange, type EventTriple, eventChunks, retentionCuts } from '../events/service.ts';
import type { Executor } from '../store/store.ts';
import { pickMetrics, valueAtPath } from './metrics.ts';
import { readBound } from './thing-data.ts';
import { type QueriedThing, queriedThings } from './things.ts';

export type ExportFormat = 'ndjson' | 'csv';

export interface ExportRequest {
  organisationKeys: string[];
  thingKey: string;
  from?: string | number | undefined;
  to?: string | number | undefined;
  format: ExportFormat;
  metrics?: string[] | undefined;
}

export interface ExportAnswer {
  contentType: string;
  fileName: string;
  body: Readable;
}

/** Events read per page: small enough that a page is a few tens of kilobytes of answer. */
export const EXPORT_PAGE_EVENTS = 1000;

/** Exports under way and pages read, for tests and operators (a client that leaves stops its export). */
export const exportProgress = { active: 0, pagesRead: 0 };

/**
 * Checks the request (the thing must be readable, the range readable) before anything is sent, so bad
 * input is a 4xx answer rather than a broken stream, and answers the stream.
 */
export async function exportEvents(db: Executor, request: ExportRequest, time: TimeFormatter): Promise<ExportAnswer> {
  const from = readBound(request.from, time.zone, 'from');
  const to = readBound(request.to, time.zone, 'to', true);
  if (from !== undefined && to !== undefined && from > to) throw invalidParam('from', 'must not be after to');
  const [thing] = (await queriedThings(db, request.organisationKeys, [request.thingKey])) as [QueriedThing];
  // Events expired while the export runs may still be written: its range is fixed when it starts.
  const range: EventRange = {
    thingId: thing.thing_id,
    from,
    to,
    byCreatedAt: false,
    notBefore: retentionCuts(thing.retention_days, null, Date.now()).events,
  };
  // The first page is read before anything is sent, so a store that fails to read it makes an error
  // answer rather than a stream broken after its status and headers.
  const rangePages = await readAhead(pages(db, range));
  // Destroyed when the client leaves: a generator is only told so at its next yield, which a CSV's
  // first pass does not reach before its end, so that pass asks between its pages.
  const dropped = () => body.destroyed;
  const lines =
    request.format === 'csv'
      ? csvLines(db, range, rangePages, request.metrics, time, dropped)
      : ndjsonLines(rangePages, request.metrics, time);
  const body = Readable.from(counted(lines), { objectMode: false });
  return {
    contentType: request.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
    fileName: `${request.thingKey.replace(/[^A-Za-z0-9_-]/g, '_')}-events.${request.format}`,
    body,
  };
}

/** The pages of the range, counted while they are read. */
async function* pages(db: Executor, range: EventRange) {
  for await (const chunk of eventChunks(db, range, EXPORT_PAGE_EVENTS)) {
    exportProgress.pagesRead++;
    yield chunk;
  }
}

/** Pages with the first one read now: they come as before, the first from memory. */
async function readAhead(source: AsyncGenerator<EventTriple[]>): Promise<AsyncGenerator<EventTriple[]>> {
  const first = await source.next();
  return (async function* () {
    try {
      if (first.done) return;
      yield first.value;
      yield* source;
    } finally {
      await source.return(undefined);
    }
  })();
}

/** Keeps `exportProgress.active` while the stream is read, however it ends. */
async function* counted(lines: AsyncGenerator<string>) {
  exportProgress.active++;
  try {
    yield* lines;
  } finally {
    exportProgress.active--;
  }
}

/** NDJSON: a line per event; with `metrics`, each event's data of those metrics only, and none for an event without any. */
async function* ndjsonLines(
  rangePages: AsyncGenerator<EventTriple[]>,
  requested: string[] | undefined,
  time: TimeFormatter,
) {
  const metrics = requested === undefined || requested.length === 0 ? undefined : requested;
  for await (const chunk of rangePages) {
    let text = '';
    for (const [at, , data] of chunk) {
      const kept = metrics === undefined ? data : pickMetrics(data, metrics, metricPath);
      if (kept !== data && Object.keys(kept).length === 0) continue;
      text += `${JSON.stringify({ timestamp: time(at), data: kept })}\n`;
    }
    yield text;
  }
}

/**
 * CSV: a header of the metrics (the requested ones in their order, else every metric of the exported
 * events sorted by name, found by a first pass over the range), then a row per event (with requested
 * metrics, per event that has any of them). After a first
 * pass the rows end at its last event, so events stored meanwhile, whose metrics the header may lack,
 * are left out rather than written without them. `rangePages` is a reading of the range: the first
 * pass, or without one the rows.
 */
async function* csvLines(
  db: Executor,
  range: EventRange,
  rangePages: AsyncGenerator<EventTriple[]>,
  requested: string[] | undefined,
  time: TimeFormatter,
  dropped: () => boolean,
) {
  let metrics = requested;
  /** The first pass's last event (null: it found none); undefined without a first pass. */
  let end: EventTriple | null | undefined;
  if (metrics === undefined || metrics.length === 0) {
    const names = new Set<string>();
    end = null;
    for await (const chunk of rangePages) {
      if (dropped()) return;
      for (const [, , data] of chunk) collectNames(data, '', names);
      end = chunk[chunk.length - 1] as EventTriple;
    }
    metrics = [...names].sort();
  }
  yield `${['timestamp', ...metrics].map(csvField).join(',')}\r\n`;
  if (end === null) return;
  const last = end;
  // After a first pass the range is read again, for the rows.
  for await (const chunk of last === undefined ? rangePages : pages(db, range)) {
    const rows = last === undefined ? chunk : chunk.filter((e) => byTimeThenId(e, last) <= 0);
    let text = '';
    for (const [at, , data] of rows) {
      const paths = metrics.map((m) => metricPath(data, m));
      // Asked for metrics (no first pass), an event with none of them is left out, as in NDJSON.
      if (last === undefined && paths.every((p) => p === undefined)) continue;
      const values = paths.map((p) => (p === undefined ? null : valueAtPath(data, p)));
      text += `${[time(at), ...values].map(csvField).join(',')}\r\n`;
    }
    yield text;
    if (rows.length < chunk.length) return;
  }
}

/**
 * Where a metric of the export is in an event: the path of its dotted name as queries read it (`a.b`
 * is `b` in the object `a`), or else members whose own names hold the dots (`{"a.b": 1}`), which the
 * CSV header names as well but a path cannot reach. Undefined when the event has neither.
 */
function metricPath(data: Record<string, unknown>, name: string): readonly string[] | undefined {
  const path = name.split('.');
  if (valueAtPath(data, path) !== undefined) return path;
  return path.length > 1 ? memberPath(data, name) : undefined;
}

/** The member names leading to `name` in `value`, the dots of `name` either inside members' names or between them. */
function memberPath(value: unknown, name: string): string[] | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const members = value as Record<string, unknown>;
  if (Object.hasOwn(members, name)) return [name];
  for (const member of Object.keys(members)) {
    if (!name.startsWith(`${member}.`)) continue;
    const rest = memberPath(members[member], name.slice(member.length + 1));
    if (rest !== undefined) return [member, ...rest];
  }
  return undefined;
}

/** The dotted names of the values in event data: nested objects are walked, anything else is a value. */
function collectNames(data: Record<string, unknown>, prefix: string, names: Set<string>): void {
  for (const [name, value] of Object.entries(data)) {
    const dotted = prefix + name;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      collectNames(value as Record<string, unknown>, `${dotted}.`, names);
    } else {
      names.add(dotted);
    }
  }
}

/**
 * A value as a CSV field (RFC 4180): text as it is, other values as JSON (arrays and objects whole),
 * null and missing values empty; quoted when it holds a comma, a quote or a line break, or a semicolon
 * or a tab, which spreadsheets in many locales read as the separator, so a formula after one stays
 * inside its field. Text that a
 * spreadsheet would run as a formula (starting with =, +, -, @, a tab or a carriage return) gets a
 * single quote in front, which spreadsheets read as "this is text" (docs/api.md, "Exporting events");
 * numbers are written as they are, so -5 stays a number.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value !== 'string' ? JSON.stringify(value) : FORMULA_START.test(value) ? `'${value}` : value;
  return /[",;\t\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const FORMULA_START = /^[=+\-@\t\r]/;
