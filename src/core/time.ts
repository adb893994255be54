/**
 * Time zones and timestamp presentation (`timestamp_format`, `time_zone`: docs/api.md, "Requests").
 * Everything is stored as epoch milliseconds; this module turns them into what a request asked for.
 */
import { DateTime, IANAZone } from 'luxon';
import { readDecimal } from './decimal.ts';
import { RAILS_TIME_ZONES } from './time-zones.ts';

export type TimestampFormat = 'int' | 'str';

const resolved = new Map<string, string | null>();

/**
 * Resolves an IANA name (`Asia/Kolkata`) or a Rails-style name (`Mumbai`,
 * `Eastern Time (US & Canada)`) to an IANA zone; undefined when neither.
 */
export function resolveTimeZone(name: string): string | undefined {
  const cached = resolved.get(name);
  if (cached !== undefined) return cached ?? undefined;
  let zone: string | null = Object.hasOwn(RAILS_TIME_ZONES, name) ? (RAILS_TIME_ZONES[name] as string) : null;
  if (zone === null && IANAZone.isValidZone(name)) zone = name;
  if (zone === null) {
    // Names are matched case-insensitively as a courtesy ("utc", "asia/kolkata").
    const lower = name.toLowerCase();
    const rails = Object.keys(RAILS_TIME_ZONES).find((k) => k.toLowerCase() === lower);
    if (rails) zone = RAILS_TIME_ZONES[rails] ?? null;
  }
  if (resolved.size < 10_000) resolved.set(name, zone);
  return zone ?? undefined;
}

export const STR_TIMESTAMP_PATTERN = 'yyyy/MM/dd HH:mm:ss';

/** Presents stored epoch milliseconds per the request's timestamp_format and zone. */
export interface TimeFormatter {
  readonly format: TimestampFormat;
  readonly zone: string;
  (ms: number): number | string;
}

export function timeFormatter(format: TimestampFormat, zone: string): TimeFormatter {
  const fn = format === 'int' ? (ms: number) => Math.floor(ms / 1000) : wallClockText(zone);
  return Object.assign(fn, { format, zone });
}

const DAY_MS = 86_400_000;
/** Where the fast path works (four-digit years whatever the offset); luxon writes the rest. */
const FAST_RANGE = [Date.UTC(1000, 0, 2), Date.UTC(9998, 11, 30)] as const;
const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/**
 * `yyyy/MM/dd HH:mm:ss` on the wall clock of a zone. Asking the zone for its offset is the slow part
 * (several microseconds), so an offset is reused for the day before or after an instant when the zone
 * has the same offset at both ends of it: no zone changes its offset twice within a day. Answers are
 * luxon's.
 */
function wallClockText(zone: string): (ms: number) => string {
  const iana = IANAZone.create(zone);
  let knownFrom = 1;
  let knownTo = 0;
  let offset = 0;
  return (ms: number) => {
    if (!(ms >= FAST_RANGE[0] && ms <= FAST_RANGE[1])) {
      return DateTime.fromMillis(ms, { zone }).toFormat(STR_TIMESTAMP_PATTERN);
    }
    if (!(ms >= knownFrom && ms <= knownTo)) {
      const offsetAt = (at: number) => Math.round(iana.offset(at) * 60_000);
      offset = offsetAt(ms);
      knownFrom = offsetAt(ms - DAY_MS) === offset ? ms - DAY_MS : ms;
      knownTo = offsetAt(ms + DAY_MS) === offset ? ms + DAY_MS : ms;
    }
    const d = new Date(ms + offset);
    return `${d.getUTCFullYear()}/${two(d.getUTCMonth() + 1)}/${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  };
}

/** Like a formatter call, but passes null and undefined through. */
export function formatOptional(time: TimeFormatter, ms: number | null | undefined): number | string | null {
  return ms === null || ms === undefined ? null : time(ms);
}

/** ISO 8601 with milliseconds, as the v2 notification action create answer shows. */
export const toIsoWithMillis = (ms: number): string => new Date(ms).toISOString();

const DATE_TIME_PATTERNS = [
  'yyyy/MM/dd HH:mm:ss',
  'yyyy-MM-dd HH:mm:ss',
  'yyyy/MM/dd',
  'yyyy-MM-dd',
  "yyyy-MM-dd'T'HH:mm:ss",
];

/** The most milliseconds from the epoch a date may lie either way (ECMAScript's Date range). */
const LAST_DATE_MS = 8.64e15;

/** Epoch seconds as ms, or undefined beyond the dates a clock can name (the stores' integers too). */
const epochMs = (seconds: number): number | undefined => {
  const ms = Math.round(seconds * 1000);
  return Math.abs(ms) <= LAST_DATE_MS ? ms : undefined;
};

/**
 * Reads a point in time given as `yyyy/mm/dd hh:mm:ss`, `yyyy-mm-dd hh:mm:ss` (in `zone`),
 * ISO 8601 with an offset, or epoch seconds (a number or decimal text, core/decimal.ts). Returns epoch
 * ms or undefined.
 */
export function parseDateTime(value: unknown, zone: string): number | undefined {
  if (typeof value === 'number') return epochMs(value);
  if (typeof value !== 'string') return undefined;
  const seconds = readDecimal(value);
  if (seconds !== undefined) return epochMs(seconds);
  const text = value.trim();
  for (const pattern of DATE_TIME_PATTERNS) {
    const parsed = DateTime.fromFormat(text, pattern, { zone });
    if (parsed.isValid) return parsed.toMillis();
  }
  // ISO 8601 needs a date part: a bare time would silently mean "today".
  if (!/^\d{4}-\d{2}-\d{2}/.test(text)) return undefined;
  const iso = DateTime.fromISO(text, { zone });
  return iso.isValid ? iso.toMillis() : undefined;
}

const TIMESTAMP_MEMBERS = new Set([
  'created_at',
  'updated_at',
  'timestamp',
  'last_beat',
  'acknowledged_at',
  'cleared_at',
  'expires_at',
  'last_used_at',
]);
/** Members whose contents belong to users (metrics, properties) and are never reinterpreted. */
const OPAQUE_MEMBERS = new Set([
  'data',
  'user_defined_properties',
  'definition',
  'headers',
  'query',
  'body',
  'configuration',
]);

/**
 * Entity snapshots (audit trail contents, an alert's thing) are stored as presented with the `int`
 * format, epoch seconds. This re-presents their timestamp members for the request's format.
 */
export function presentStoredTimestamps(value: unknown, time: TimeFormatter): unknown {
  if (time.format === 'int') return value;
  return restamp(value, time);
}

function restamp(value: unknown, time: TimeFormatter): unknown {
  if (Array.isArray(value)) return value.map((v) => restamp(v, time));
  if (value === null || typeof value !== 'object') return value;
  // Members defined, not assigned: a member named `__proto__` (event data holds any name) stays one.
  return Object.fromEntries(
    Object.entries(value).map(([key, member]) => [
      key,
      TIMESTAMP_MEMBERS.has(key) && typeof member === 'number'
        ? time(member * 1000)
        : OPAQUE_MEMBERS.has(key)
          ? member
          : restamp(member, time),
    ]),
  );
}

/** The formatter used to store entity snapshots. */
export const STORED_TIME: TimeFormatter = timeFormatter('int', 'Etc/UTC');
