/**
 * Calendar-aligned time buckets for aggregated telemetry queries (`time_grouping`,
 * `time_grouping_value`, `time_zone`): which buckets a `from`..`to` range needs, and which bucket
 * each event falls in.
 *
 * Alignment rule. A bucket of N units starts at local-calendar multiples of N inside the next
 * larger unit, read on the wall clock of the zone:
 *
 * - `minute`: N minutes from the top of the local hour (15 -> :00 :15 :30 :45);
 * - `hour`: N hours from local midnight (hour buckets start at local :00, also in zones whose
 *   offset has 30 or 45 minutes, such as Asia/Kolkata and Asia/Kathmandu);
 * - `day`: N days from the 1st of the local month, starting at local midnight;
 * - `month`: N months from January, starting at local midnight of the 1st.
 *
 * A bucket never spans the start of the next larger unit: when N does not divide it, the last
 * bucket in it is short (7-day buckets: the 1st, 8th, 15th, 22nd and 29th of each month), and an N
 * at or above its size (90 minutes, 36 hours) makes each bucket one whole larger unit.
 *
 * Daylight-saving and other clock changes: a bucket starts at the instant the local clock reads
 * one of those times, or jumps forward over one (that start is skipped, so the bucket begins at
 * the jump: a day whose midnight is skipped starts at 01:00). When the clock falls back, minute
 * and hour starts it reads again begin buckets again, so none runs longer than its length: a
 * fall-back day has 25 hour buckets, two of them at the same local time, and a spring-forward day
 * 23. Day and month starts are taken only the first time: a day bucket lasts 23 or 25 hours on a
 * change day, also where the clock falls back onto midnight.
 *
 * Offsets come from luxon's IANAZone. They are sampled at least weekly (and at every day or month
 * bucket's end); two changes that undo each other between samples would go unseen, which tz data
 * has not had in the years that matter.
 */
import { IANAZone } from 'luxon';
import { ApiError } from '../core/errors.ts';

export type TimeGrouping = 'month' | 'day' | 'hour' | 'minute';

export const TIME_GROUPINGS: readonly TimeGrouping[] = ['month', 'day', 'hour', 'minute'];

export const DEFAULT_MAX_BUCKETS = 10_000;

export interface TimeBucketOptions {
  /** Start of the range, epoch ms (inclusive). */
  from: number;
  /** End of the range, epoch ms (inclusive). */
  to: number;
  grouping: TimeGrouping;
  /** How many units one bucket spans (`time_grouping_value`), a positive integer. */
  size: number;
  /** IANA zone whose calendar the buckets follow. */
  zone: string;
  /** More buckets than this is a TooManyBucketsError (default 10000). */
  maxBuckets?: number;
}

/** The buckets covering a range: bucket i is [starts[i], ends[i]), and ends[i] === starts[i + 1]. */
export interface TimeBuckets {
  readonly grouping: TimeGrouping;
  readonly size: number;
  readonly zone: string;
  readonly length: number;
  /** Bucket starts, epoch ms, strictly ascending; the first bucket holds `from`, the last `to`. */
  readonly starts: readonly number[];
  /** Bucket ends (exclusive), epoch ms. */
  readonly ends: readonly number[];
  /** The bucket holding `ms` (start inclusive, end exclusive), or -1 when no bucket does. */
  indexOf(ms: number): number;
  /** Each bucket's key: its start presented by `time` (e.g. a TimeFormatter), as text. */
  keys(time: (ms: number) => number | string): string[];
}

/** The range needs more buckets than allowed; a 400 for the request. */
export class TooManyBucketsError extends ApiError {
  /** How many buckets the range needs (by the local calendar when it is far over the limit). */
  readonly count: number;
  readonly max: number;

  constructor(count: number, max: number) {
    super(400, [
      {
        code: 'invalid',
        param: 'time_grouping',
        message: `would make ${count} time buckets; at most ${max} are allowed (narrow from/to or group coarser)`,
      },
    ]);
    this.name = 'TooManyBucketsError';
    this.count = count;
    this.max = max;
  }
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Keeps the walk before and after the range inside what Date can represent (ms either side of 1970). */
export const MAX_BUCKETED_INSTANT = 8.6e15;

/**
 * Builds the buckets covering `from`..`to`. Throws TooManyBucketsError past `maxBuckets`,
 * and RangeError for arguments no request should reach here with (from > to, an unknown zone,
 * a size that is not a positive integer).
 */
export function timeBuckets(options: TimeBucketOptions): TimeBuckets {
  const { grouping, size, zone } = options;
  const max = options.maxBuckets ?? DEFAULT_MAX_BUCKETS;
  if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`bucket size must be a positive integer: ${size}`);
  if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`maxBuckets must be a positive integer: ${max}`);
  if (!IANAZone.isValidZone(zone)) throw new RangeError(`unknown time zone: ${zone}`);
  for (const value of [options.from, options.to]) {
    if (!Number.isFinite(value) || Math.abs(value) > MAX_BUCKETED_INSTANT)
      throw new RangeError(`instant out of range: ${value}`);
  }
  if (options.from > options.to) throw new RangeError('from is after to');
  // Transitions fall on whole seconds, so whole milliseconds lose nothing.
  const from = Math.floor(options.from);
  const to = Math.floor(options.to);

  const grid = gridFor(grouping, size);
  const offsets = new ZoneOffsets(IANAZone.create(zone), grid.probeStep);
  const fromOffset = offsets.at(from);
  // Counting by the calendar is cheap; real counts differ from it only by the few starts that
  // clock changes add or skip, so far beyond the limit there is no need to walk the range.
  const calendarCount = grid.index(to + offsets.at(to)) - grid.index(from + fromOffset) + 1;
  if (calendarCount > 2 * max) throw new TooManyBucketsError(calendarCount, max);

  const { first, walker, next } = firstBoundary(grid, offsets, from, fromOffset);
  const bounds = [first];
  let boundary = next ?? walker.next();
  for (;;) {
    bounds.push(boundary);
    if (boundary > to) break;
    if (bounds.length > 2 * max + 1) throw new TooManyBucketsError(bounds.length - 1, max);
    boundary = walker.next();
  }
  if (bounds.length - 1 > max) throw new TooManyBucketsError(bounds.length - 1, max);
  return new CalendarBuckets(grouping, size, zone, bounds);
}

class CalendarBuckets implements TimeBuckets {
  readonly grouping: TimeGrouping;
  readonly size: number;
  readonly zone: string;
  readonly length: number;
  readonly starts: readonly number[];
  readonly ends: readonly number[];
  readonly #bounds: Float64Array;
  /** Events usually arrive in time order, so the last answer is the best first guess. */
  #hint = 0;

  constructor(grouping: TimeGrouping, size: number, zone: string, bounds: number[]) {
    this.grouping = grouping;
    this.size = size;
    this.zone = zone;
    this.length = bounds.length - 1;
    this.starts = Object.freeze(bounds.slice(0, -1));
    this.ends = Object.freeze(bounds.slice(1));
    this.#bounds = Float64Array.from(bounds);
  }

  indexOf(ms: number): number {
    const b = this.#bounds;
    const n = this.length;
    // Written so that NaN falls outside too.
    if (!(ms >= b[0]! && ms < b[n]!)) return -1;
    const hint = this.#hint;
    if (ms >= b[hint]!) {
      if (ms < b[hint + 1]!) return hint;
      if (hint + 2 <= n && ms < b[hint + 2]!) {
        this.#hint = hint + 1;
        return hint + 1;
      }
    }
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (b[mid]! <= ms) lo = mid;
      else hi = mid - 1;
    }
    this.#hint = lo;
    return lo;
  }

  keys(time: (ms: number) => number | string): string[] {
    return this.starts.map((start) => String(time(start)));
  }
}

/**
 * The bucket starts of one grouping on the wall-clock timeline: local date and time written as if
 * it were UTC, where every day has 24 hours, so calendar steps are plain arithmetic.
 */
interface Grid {
  /** The latest start at or before wall time `w`. */
  floor(w: number): number;
  /** The earliest start after wall time `w`. */
  next(w: number): number;
  /** A running count of starts up to wall time `w`: index(b) - index(a) starts lie in (a, b]. */
  index(w: number): number;
  /** How far apart zone offsets are sampled when looking for clock changes. */
  readonly probeStep: number;
  /** How far ahead one lookup covers for buckets much shorter than that (0: each bucket's end). */
  readonly lookahead: number;
  /**
   * Whether the clock reading a start again after falling back starts another bucket. Minute and
   * hour buckets do, so none runs longer than its length; a day or month starts only once.
   */
  readonly repeats: boolean;
}

function gridFor(grouping: TimeGrouping, size: number): Grid {
  switch (grouping) {
    case 'minute':
      return fixedGrid(MINUTE, HOUR, size);
    case 'hour':
      return fixedGrid(HOUR, DAY, size);
    case 'day':
      return dayGrid(size);
    case 'month':
      return monthGrid(size);
    default:
      throw new RangeError(`unknown time grouping: ${String(grouping)}`);
  }
}

/** Minutes within the hour, or hours within the day: units of fixed wall-clock length. */
function fixedGrid(unit: number, parent: number, size: number): Grid {
  const step = Math.min(size, parent / unit) * unit;
  const perParent = Math.ceil(parent / step);
  const floor = (w: number): number => {
    const p = Math.floor(w / parent) * parent;
    return p + Math.floor((w - p) / step) * step;
  };
  return {
    floor,
    next(w) {
      const p = Math.floor(w / parent) * parent;
      return Math.min(floor(w) + step, p + parent);
    },
    index(w) {
      const p = Math.floor(w / parent);
      return p * perParent + Math.floor((w - p * parent) / step);
    },
    probeStep: 7 * DAY,
    lookahead: 7 * DAY,
    repeats: true,
  };
}

function dayGrid(size: number): Grid {
  const n = Math.min(size, 31);
  const cycle = monthCycle(n);
  const floor = (w: number): number => {
    const d = new Date(w);
    const day = d.getUTCDate() - 1;
    return utc(d.getUTCFullYear(), d.getUTCMonth(), 1) + (day - (day % n)) * DAY;
  };
  return {
    floor,
    next(w) {
      const d = new Date(w);
      return Math.min(floor(w) + n * DAY, utc(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
    },
    index(w) {
      const d = new Date(w);
      const year = d.getUTCFullYear();
      const cycles = Math.floor(year / 400);
      const inCycle = (year - cycles * 400) * 12 + d.getUTCMonth();
      return cycles * cycle.total + cycle.before[inCycle]! + Math.floor((d.getUTCDate() - 1) / n);
    },
    probeStep: n < 7 ? 7 * DAY : 31 * DAY,
    lookahead: n < 7 ? 7 * DAY : 0,
    repeats: false,
  };
}

function monthGrid(size: number): Grid {
  const n = Math.min(size, 12);
  const perYear = Math.ceil(12 / n);
  const floor = (w: number): number => {
    const d = new Date(w);
    const month = d.getUTCMonth();
    return utc(d.getUTCFullYear(), month - (month % n), 1);
  };
  return {
    floor,
    next(w) {
      const d = new Date(w);
      const month = d.getUTCMonth();
      const nextMonth = month - (month % n) + n;
      return utc(d.getUTCFullYear(), Math.min(nextMonth, 12), 1);
    },
    index(w) {
      const d = new Date(w);
      return d.getUTCFullYear() * perYear + Math.floor(d.getUTCMonth() / n);
    },
    probeStep: n * 31 * DAY,
    lookahead: 0,
    repeats: false,
  };
}

/** Day buckets per month over the 400-year Gregorian cycle, for counting long ranges in O(1). */
interface MonthCycle {
  /** before[i]: buckets in the cycle's months before month i (i = year-in-cycle * 12 + month). */
  readonly before: Int32Array;
  readonly total: number;
}

const monthCycles = new Map<number, MonthCycle>();

function monthCycle(n: number): MonthCycle {
  let cycle = monthCycles.get(n);
  if (!cycle) {
    const before = new Int32Array(400 * 12 + 1);
    for (let i = 0; i < 400 * 12; i++)
      before[i + 1] = before[i]! + Math.ceil(daysInMonth(Math.floor(i / 12), i % 12) / n);
    cycle = { before, total: before[400 * 12]! };
    monthCycles.set(n, cycle);
  }
  return cycle;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 1 && leap ? 29 : MONTH_DAYS[month]!;
}

/** Midnight UTC of a date; unlike Date.UTC, years 0-99 are not taken as 1900-1999. */
function utc(year: number, month: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, day);
  return d.getTime();
}

/** Offsets `before` on [lo, ...] and `after` at hi: a clock change lies in (lo, hi]. */
interface ChangeWindow {
  lo: number;
  hi: number;
  after: number;
}

/**
 * The zone's UTC offset at an instant, and where it changes. Each offset costs a luxon lookup
 * (tens of microseconds), so the walk asks about once per bucket or per probe step, whichever is
 * longer, and pins a change down to the second only when it has to.
 */
class ZoneOffsets {
  readonly #zone: IANAZone;
  readonly #step: number;

  constructor(zone: IANAZone, step: number) {
    this.#zone = zone;
    this.#step = step;
  }

  /** Offset in ms (local wall time = instant + offset). */
  at(ms: number): number {
    return Math.round(this.#zone.offset(ms) * MINUTE);
  }

  /**
   * The first probe window in (lo, hi] whose end has an offset other than `offset` (the offset at
   * lo), probing every step and at hi. Changes that undo each other between two probes go unseen;
   * in practice they are weeks apart.
   */
  changeWithin(lo: number, hi: number, offset: number): ChangeWindow | undefined {
    let a = lo;
    while (a < hi) {
      const b = Math.min(a + this.#step, hi);
      const after = this.at(b);
      if (after !== offset) return { lo: a, hi: b, after };
      a = b;
    }
    return undefined;
  }

  /** The instant of the change in (lo, hi], given `offset` at lo and another at hi. Changes fall on whole seconds. */
  bisect(lo: number, hi: number, offset: number): number {
    let a = Math.floor(lo / SECOND);
    let b = Math.floor(hi / SECOND);
    while (b - a > 1) {
      const mid = Math.floor((a + b) / 2);
      if (this.at(mid * SECOND) === offset) a = mid;
      else b = mid;
    }
    return b * SECOND;
  }
}

/** Whether the clock moving from wall time `before` to `after` (a clock change) starts a bucket. */
function startsBucket(grid: Grid, before: number, after: number): boolean {
  const start = grid.floor(after);
  return start === after || start > before;
}

/**
 * Walks bucket starts forward in real time. Between clock changes the wall clock runs with the
 * instant, so the next start is plain arithmetic; at a change the rule in the module comment decides.
 */
class BoundaryWalker {
  readonly #grid: Grid;
  readonly #offsets: ZoneOffsets;
  #at: number;
  #offset: number;
  /** The offset is known to be #offset on [#at, #knownTo]. */
  #knownTo: number;
  /** The first instant after #knownTo with another offset, once pinned down. */
  #change: number | undefined;
  /** A probe window known to hold a change, not yet pinned down. */
  #window: ChangeWindow | undefined;
  /** The latest start (wall time) the clock has reached, for grids whose starts do not repeat. */
  #reached: number;

  constructor(grid: Grid, offsets: ZoneOffsets, at: number, offset: number, knownTo: number) {
    this.#grid = grid;
    this.#offsets = offsets;
    this.#at = at;
    this.#offset = offset;
    this.#knownTo = knownTo;
    this.#reached = grid.floor(at + offset);
  }

  /** The first bucket start after the current position. */
  next(): number {
    for (;;) {
      const instant = this.#nextReading();
      if (this.#grid.repeats) return instant;
      const start = this.#grid.floor(instant + this.#offset);
      if (start > this.#reached) {
        this.#reached = start;
        return instant;
      }
    }
  }

  /** The first instant after the current position where the clock reaches a start time. */
  #nextReading(): number {
    const offsets = this.#offsets;
    for (;;) {
      const candidate = this.#grid.next(this.#at + this.#offset) - this.#offset;
      if (candidate <= this.#knownTo) {
        this.#at = candidate;
        return candidate;
      }
      if (this.#change !== undefined) {
        const change = this.#change;
        const offset = offsets.at(change);
        const before = change - 1 + this.#offset;
        this.#moveTo(change, offset, change);
        this.#change = undefined;
        if (startsBucket(this.#grid, before, change + offset)) return change;
        continue;
      }
      if (this.#window === undefined) {
        // Short buckets share one lookup a step ahead; long ones are checked at their end.
        const hi = Math.max(candidate, this.#knownTo + this.#grid.lookahead);
        this.#window = offsets.changeWithin(this.#knownTo, hi, this.#offset);
        if (this.#window === undefined) {
          this.#knownTo = hi;
          continue;
        }
      }
      const window = this.#window;
      if (candidate < window.hi && window.hi - window.lo > 8 * (candidate - this.#at)) {
        // Many buckets share the window: pinning the change down is cheaper than checking each.
        this.#pin(window);
        continue;
      }
      const there = candidate === window.hi ? window.after : offsets.at(candidate);
      if (there === this.#offset) {
        if (candidate > window.hi) {
          this.#pin(window);
          continue;
        }
        // The change is later in the window.
        window.lo = candidate;
        this.#knownTo = candidate;
        this.#at = candidate;
        return candidate;
      }
      // A change lies in (window.lo, min(candidate, window.hi)].
      this.#window = undefined;
      const single = candidate <= window.hi || there === window.after;
      const start = single ? this.#settle(window.lo, candidate, there) : undefined;
      if (start !== undefined) return start;
      this.#pin(candidate < window.hi ? { lo: window.lo, hi: candidate, after: there } : window);
    }
  }

  #pin(window: ChangeWindow): void {
    this.#change = this.#offsets.bisect(window.lo, window.hi, this.#offset);
    this.#knownTo = this.#change - 1;
    this.#window = undefined;
  }

  #moveTo(at: number, offset: number, knownTo: number): number {
    this.#at = at;
    this.#offset = offset;
    this.#knownTo = knownTo;
    return at;
  }

  /**
   * The next start when the offset is `after` at the candidate and was the current one at lo: a
   * long bucket with one clock change inside. A lookup or two where the change must have put the
   * start settles it without bisecting; undefined when they show more than one change.
   */
  #settle(lo: number, candidate: number, after: number): number | undefined {
    const offsets = this.#offsets;
    const offset = this.#offset;
    const target = candidate + offset;
    if (after > offset) {
      // Forward: the clock reaches the target after the change, or jumps over it (the start is the change).
      let from = lo;
      const reached = target - after;
      if (reached > lo) {
        const there = offsets.at(reached);
        if (there === after) return this.#moveTo(reached, after, candidate);
        if (there !== offset) return undefined;
        from = reached;
      }
      return this.#moveTo(offsets.bisect(from, candidate, offset), after, candidate);
    }
    // Backward: the clock reads each start after the earliest possible landing once more, the first
    // one read after the change is next (the target itself at the latest).
    let start = this.#grid.next(lo + offset + (after - offset));
    for (let i = 0; i < 8 && start <= target; i++, start = this.#grid.next(start)) {
      const instant = start - after;
      const there = instant === candidate ? after : offsets.at(instant);
      if (there === after) return this.#moveTo(instant, after, Math.max(instant, candidate));
      if (there !== offset) return undefined;
    }
    return undefined;
  }
}

/** The start of the bucket holding `from`, and a walker positioned there (or past it, with `next`). */
function firstBoundary(
  grid: Grid,
  offsets: ZoneOffsets,
  from: number,
  fromOffset: number,
): { first: number; walker: BoundaryWalker; next?: number } {
  const start = grid.floor(from + fromOffset) - fromOffset;
  // Where starts do not repeat, the clock must not have read this one before a fall-back (which
  // takes less than a day back) either.
  const since = grid.repeats ? start : start - DAY;
  if (
    since === from ||
    (offsets.at(since) === fromOffset && offsets.changeWithin(since, from, fromOffset) === undefined)
  ) {
    return { first: start, walker: new BoundaryWalker(grid, offsets, start, fromOffset, from) };
  }
  // A clock change lies between the calendar start and `from`: walk forward from well before it.
  for (let back = 2 * DAY + grid.probeStep; ; back *= 4) {
    const at = start - back;
    const walker = new BoundaryWalker(grid, offsets, at, offsets.at(at), at);
    let first = Number.NaN;
    let next = walker.next();
    while (next <= from) {
      first = next;
      next = walker.next();
    }
    if (!Number.isNaN(first)) return { first, walker, next };
  }
}
