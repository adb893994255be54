/**
 * API rate limits and usage (docs/api.md, "Rate limits and usage"): each organisation may make
 * API_RATE_LIMIT user API requests a minute, counted across instances through the store; what an
 * organisation uses is answered by GET /api/v3/usage.
 */
import { ApiError } from '../core/errors.ts';
import { LATE, waitAtMost } from '../core/wait.ts';
import type { EventLimitSettings } from '../events/event-limits.ts';
import type { IngestBatch } from '../events/writer.ts';
import { findOrganisation } from '../organisations/service.ts';
import {
  DEFAULT_STATEMENT_TIMEOUT_MS,
  StoreTimeoutError,
  storeFaultOf,
  withStatementTimeout,
} from '../store/faults.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import { countAlive } from '../things/service.ts';
import * as usage from './repository.ts';

/** Fixed windows of one minute, starting on the minute (epoch ms multiples of 60,000). */
export const WINDOW_MS = 60_000;
/** How long an instance trusts the shared count it last read before it reads it again (ms). */
export const SYNC_MS = 1000;
/** How long the windows are kept: long enough for `api_requests_today`. */
const KEEP_WINDOWS_MS = 2 * 86_400_000;
const DAY_MS = 86_400_000;

/** The rate limit's answer to one request. */
export interface Allowance {
  allowed: boolean;
  limit: number;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

interface Window {
  start: number;
  /** The window's count across every instance, as last read (this instance's flushed requests included). */
  shared: number;
  /** This instance's requests not yet added to the shared count. */
  pending: number;
  syncedAt: number;
  /** The sync under way: it settles to its failure, or undefined when it succeeded; it never rejects. */
  syncing: Promise<unknown> | undefined;
}

/**
 * Counts each organisation's user API requests in memory and adds them to the shared count in the
 * store in batches: when the count it knows is older than SYNC_MS (read again, and awaited, before the
 * request is decided), when a hundredth of the limit is pending, and every SYNC_MS in the background.
 * A request costs a map lookup; the store is asked at most about once a second per organisation and
 * instance, or every hundredth of the limit. The price: instances learn of each other's requests up to
 * that late, so with N instances a window may let through up to (N - 1) x a hundredth of the limit
 * more (or a second of another instance's requests), never fewer.
 *
 * Each of its statements, whoever started it (a request, or the background flush outside any
 * request), runs under `statementTimeoutMs`, and a request waits for the shared count at most that
 * long: a database that hangs answers the request 503 within its statement timeout, as its own
 * statements would (docs/operations.md, "When the database fails"), rather than holding every request
 * of the organisation behind a flush that never ends. A count that cannot be stored for another
 * reason (a full disk) stays pending, and requests are decided on the count known.
 */
export class ApiRateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly timer: NodeJS.Timeout;
  private readonly batch: number;
  private prunedAt = 0;
  /** The background pass under way, and the one asked meanwhile: one at a time, however long the store takes. */
  private flushing: Promise<void> | undefined;
  private nextFlush: Promise<void> | undefined;

  constructor(
    private readonly db: Executor,
    readonly limit: number,
    private readonly onError: (error: unknown) => void,
    private readonly clock: () => number = Date.now,
    /** The longest a statement, and a request's wait for the shared count, may take (ms; 0: no bound). */
    private readonly statementTimeoutMs = DEFAULT_STATEMENT_TIMEOUT_MS,
  ) {
    this.batch = Math.ceil(limit / 100);
    this.timer = setInterval(() => void this.flushAll(), SYNC_MS).unref();
  }

  /** Counts a request of the organisation, unless its window is full. */
  async take(organisationKey: string): Promise<Allowance> {
    const now = this.clock();
    const start = now - (now % WINDOW_MS);
    let window = this.windows.get(organisationKey);
    if (window === undefined || window.start !== start) {
      window = { start, shared: 0, pending: 0, syncedAt: 0, syncing: undefined };
      this.windows.set(organisationKey, window);
    }
    if (now - window.syncedAt >= SYNC_MS) {
      await this.awaitSync(this.sync(organisationKey, window), Date.now() + this.statementTimeoutMs);
    }
    const used = window.shared + window.pending;
    const resetSeconds = Math.ceil((start + WINDOW_MS - now) / 1000);
    if (used >= this.limit) return { allowed: false, limit: this.limit, remaining: 0, resetSeconds };
    window.pending++;
    if (window.pending >= this.batch) void this.sync(organisationKey, window);
    return { allowed: true, limit: this.limit, remaining: this.limit - used - 1, resetSeconds };
  }

  /**
   * Adds every pending request of an organisation that made a request in this window to the shared
   * count: after the one being added, if any, the rest. Waits at most the statement timeout in all;
   * throws when the database does not answer.
   */
  async flush(organisationKey: string): Promise<void> {
    const window = this.windows.get(organisationKey);
    if (window !== undefined) await this.flushWindow(organisationKey, window, Date.now() + this.statementTimeoutMs);
  }

  /** Waits for a window's sync under way, then syncs what is pending since, until `deadline` (awaitSync). */
  private async flushWindow(organisationKey: string, window: Window, deadline: number): Promise<void> {
    if (window.syncing) await this.awaitSync(window.syncing, deadline);
    if (window.pending > 0) await this.awaitSync(this.sync(organisationKey, window), deadline);
  }

  /**
   * Waits for a sync until `deadline` (Date.now() time; ignored without a statement timeout). A
   * database that does not answer, by then or with a failure, is thrown (a 503 for a request); any
   * other failure (a full disk) was told to onError, and the count known is used.
   */
  private async awaitSync(syncing: Promise<unknown>, deadline: number): Promise<void> {
    const waitMs = this.statementTimeoutMs > 0 ? Math.max(1, deadline - Date.now()) : 0;
    const failure = await waitAtMost(syncing, waitMs);
    if (failure === LATE) throw new StoreTimeoutError('the database did not answer in time');
    if (failure !== undefined && storeFaultOf(failure) === 'unavailable') throw failure;
  }

  /** Adds what is pending and reads the shared count; one at a time per window. */
  private sync(organisationKey: string, window: Window): Promise<unknown> {
    window.syncing ??= withStatementTimeout(this.statementTimeoutMs, async () => {
      const delta = window.pending;
      const total = await usage.addRequests(this.db, organisationKey, window.start, delta);
      window.pending -= delta;
      window.shared = total;
      window.syncedAt = this.clock();
    })
      .then(
        () => undefined,
        (error: unknown) => {
          this.onError(error);
          return error;
        },
      )
      .finally(() => {
        window.syncing = undefined;
      });
    return window.syncing;
  }

  /**
   * Every SYNC_MS: pending requests flushed, past windows forgotten, old stored windows pruned hourly.
   * One pass at a time: a pass asked while one is under way (the store is slow) runs after it, and
   * passes asked meanwhile are that one.
   */
  flushAll(): Promise<void> {
    if (this.flushing === undefined) {
      this.flushing = this.flushPass().finally(() => {
        this.flushing = undefined;
      });
      return this.flushing;
    }
    this.nextFlush ??= this.flushing.then(() => {
      this.nextFlush = undefined;
      return this.flushAll();
    });
    return this.nextFlush;
  }

  private async flushPass(): Promise<void> {
    const now = this.clock();
    const current = now - (now % WINDOW_MS);
    for (const [organisationKey, window] of this.windows) {
      if (window.pending > 0) await this.sync(organisationKey, window);
      if (window.start < current) this.windows.delete(organisationKey);
    }
    if (now - this.prunedAt >= 3_600_000) {
      this.prunedAt = now;
      await withStatementTimeout(this.statementTimeoutMs, () =>
        usage.pruneWindows(this.db, now - KEEP_WINDOWS_MS),
      ).catch(this.onError);
    }
  }

  /**
   * Stops the background flush after flushing what is pending, waiting at most the statement timeout
   * in all: a stop must end whatever the database does (what could not be stored is told to onError).
   */
  async close(): Promise<void> {
    clearInterval(this.timer);
    const deadline = Date.now() + this.statementTimeoutMs;
    try {
      for (const [organisationKey, window] of this.windows) await this.flushWindow(organisationKey, window, deadline);
    } catch (error) {
      this.onError(error);
    }
  }
}

/**
 * Counts a user API request of an organisation: answers the RateLimit-* headers every answer carries,
 * or throws the 429 (with Retry-After) of a full window, before anything of the request is done.
 */
export async function limitRequest(limiter: ApiRateLimiter, organisationKey: string): Promise<Record<string, string>> {
  const allowance = await limiter.take(organisationKey);
  const headers = {
    'ratelimit-limit': String(allowance.limit),
    'ratelimit-remaining': String(allowance.remaining),
    'ratelimit-reset': String(allowance.resetSeconds),
  };
  if (allowance.allowed) return headers;
  const message = `the organisation has made its ${allowance.limit} API requests of this minute; try again in ${allowance.resetSeconds} s`;
  throw new ApiError(429, [{ code: 'rate_limited', message }], message, {
    ...headers,
    'retry-after': String(allowance.resetSeconds),
  });
}

const dayStart = (at: number) => at - (at % DAY_MS);

/**
 * Counts the events a writer transaction stores, per organisation and UTC day of receipt (in that
 * transaction, after the rest of its work, so the counted row stays locked only until it commits).
 */
export async function countStoredEvents(tx: Tx, batches: readonly IngestBatch[], now = Date.now()): Promise<void> {
  const byOrganisation = new Map<string, number>();
  for (const b of batches) byOrganisation.set(b.subject.organisationKey, 0);
  for (const b of batches) {
    const key = b.subject.organisationKey;
    byOrganisation.set(key, (byOrganisation.get(key) as number) + b.events.length);
  }
  // In organisation order, so that concurrent writers (several instances) lock the rows in one order.
  const counts = [...byOrganisation]
    .filter(([, events]) => events > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([organisationKey, events]) => ({ organisationKey, start: dayStart(now), events }));
  if (counts.length === 0) return;
  await usage.addStoredEvents(tx, counts);
  const minute = minuteStart(now);
  await usage.addStoredEventMinutes(
    tx,
    counts.map(({ organisationKey, events }) => ({ organisationKey, start: minute, events })),
  );
  // Older minutes are forgotten once a minute by each instance, in the same transaction; every instance
  // deletes in key order, after locking its current minute's rows, so two never wait on each other.
  if (minute !== prunedMinute) {
    prunedMinute = minute;
    await usage.pruneEventMinutes(tx, minute - KEEP_MINUTES_MS);
  }
}

const MINUTE_MS = 60_000;
/** How long the events of each minute are kept: the fleet summary reads the last hour. */
const KEEP_MINUTES_MS = 2 * 3_600_000;
const minuteStart = (at: number) => at - (at % MINUTE_MS);
/** The minute whose older minutes this instance last deleted. */
let prunedMinute = 0;

/**
 * How an organisation's fleet is doing (docs/api.md, "Fleet summary"): its things, how many are
 * alive, and the events it received (stored) in each of the last 60 minutes, oldest first, the
 * current minute last (so far).
 */
export async function fleetSummaryOf(store: Store, organisationKey: string, now = Date.now()) {
  const { things, alive } = await countAlive(store.db, organisationKey, now);
  const current = minuteStart(now);
  const first = current - 59 * MINUTE_MS;
  const stored = new Map(
    (await usage.eventMinutesSince(store.db, organisationKey, first)).map((m) => [m.minuteStart, m.events]),
  );
  const minutes = Array.from({ length: 60 }, (_, i) => {
    const start = first + i * MINUTE_MS;
    return { minute: start, events: stored.get(start) ?? 0 };
  });
  return {
    things,
    online: alive,
    offline: things - alive,
    events_last_hour: minutes.reduce((sum, m) => sum + m.events, 0),
    events_per_minute: minutes,
  };
}

/** What an event row costs beyond its data, by estimate: ids, times and two index entries (bytes). */
export const EVENT_OVERHEAD_BYTES = 64;
/** What a thing costs, by estimate: its row, index entries and rollup share (bytes). */
export const THING_BYTES = 1024;

/**
 * Counts the events each organisation had refused past its limits (events/event-limits.ts) in memory,
 * and adds them to the store's count of the UTC day every SYNC_MS and before usage is read. A refusal
 * costs a map update, not a write: a flood refused by the thousand a second writes once a second. Its
 * statement runs under `statementTimeoutMs`; counts it could not add stay for the next flush (one
 * count per organisation and day, however long the store fails).
 */
export class LimitedEventCounter {
  private pending = new Map<string, { start: number; events: number }>();
  private readonly timer: NodeJS.Timeout;
  /** The flush under way, and the one asked meanwhile: at most one of each. */
  private flushing: Promise<unknown> | undefined;
  private next: Promise<unknown> | undefined;

  constructor(
    private readonly db: Executor,
    private readonly onError: (error: unknown) => void,
    private readonly clock: () => number = Date.now,
    /** The longest its statement may take (ms; 0: no bound). */
    private readonly statementTimeoutMs = DEFAULT_STATEMENT_TIMEOUT_MS,
  ) {
    this.timer = setInterval(() => void this.flush(), SYNC_MS).unref();
  }

  add(organisationKey: string, events: number): void {
    const start = dayStart(this.clock());
    const key = `${start}:${organisationKey}`;
    const counted = this.pending.get(key);
    if (counted) counted.events += events;
    else this.pending.set(key, { start, events });
  }

  /**
   * Adds what is counted to the store; one flush at a time (one asked while another runs follows it,
   * and takes in what was counted until then). Failures go to onError; the flush settles to its
   * failure, or undefined, and never rejects.
   */
  flush(): Promise<unknown> {
    if (this.flushing === undefined) {
      this.flushing = this.write().finally(() => {
        this.flushing = undefined;
      });
      return this.flushing;
    }
    this.next ??= this.flushing.then(() => {
      this.next = undefined;
      return this.flush();
    });
    return this.next;
  }

  private async write(): Promise<unknown> {
    if (this.pending.size === 0) return undefined;
    const counted = this.pending;
    this.pending = new Map();
    const counts = [...counted]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, { start, events }]) => ({ organisationKey: key.slice(key.indexOf(':') + 1), start, events }));
    try {
      await withStatementTimeout(this.statementTimeoutMs, () => usage.addLimitedEvents(this.db, counts));
      return undefined;
    } catch (error) {
      this.onError(error);
      for (const { organisationKey, start, events } of counts) {
        const key = `${start}:${organisationKey}`;
        const counting = this.pending.get(key);
        if (counting) counting.events += events;
        else this.pending.set(key, { start, events });
      }
      return error;
    }
  }

  /**
   * A flush, waited for at most the statement timeout: a database that does not answer, by then or
   * with a failure, is thrown (for a request, a 503).
   */
  async flushWithin(): Promise<void> {
    const failure = await waitAtMost(this.flush(), this.statementTimeoutMs);
    if (failure === LATE) throw new StoreTimeoutError('the database did not answer in time');
    if (failure !== undefined && storeFaultOf(failure) === 'unavailable') throw failure;
  }

  /** Stops the flushes after a last one, waited for at most the statement timeout. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await waitAtMost(this.flush(), this.statementTimeoutMs);
  }
}

/**
 * The events-a-second limits an organisation's devices and users are under (events/event-limits.ts): its
 * own `events_per_second`, set by its parent, or else the server's EVENTS_PER_SECOND_PER_ORGANISATION,
 * and each of its key pairs' EVENTS_PER_SECOND_PER_KEY_PAIR; 0 is no limit.
 */
async function eventsLimitsOf(
  db: Executor,
  organisationKey: string,
  server: EventLimitSettings,
): Promise<{
  events_per_second_limit: number;
  events_per_second_limit_source: 'organisation' | 'server_default';
  events_per_second_per_key_pair_limit: number;
}> {
  const own = (await findOrganisation(db, organisationKey))?.events_per_second ?? null;
  const perKeyPair = { events_per_second_per_key_pair_limit: server.perKeyPair };
  return own === null
    ? {
        events_per_second_limit: server.perOrganisation,
        events_per_second_limit_source: 'server_default',
        ...perKeyPair,
      }
    : { events_per_second_limit: own, events_per_second_limit_source: 'organisation', ...perKeyPair };
}

/** What an organisation uses (docs/api.md, "Rate limits and usage"); days and months are UTC. */
export async function usageOf(
  store: Store,
  limiter: ApiRateLimiter,
  organisationKey: string,
  now = Date.now(),
  limited?: LimitedEventCounter,
  /** The server's EVENTS_PER_SECOND_PER_ORGANISATION, for an organisation without its own, and _PER_KEY_PAIR (0: none). */
  eventLimits: EventLimitSettings = { perOrganisation: 0, perKeyPair: 0 },
) {
  // Together, each waiting at most the statement timeout: a database that hangs is a 503 in that time.
  await Promise.all([limiter.flush(organisationKey), limited?.flushWithin()]);
  const today = dayStart(now);
  const date = new Date(now);
  const month = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  const { things, eventBytes } = await usage.thingFigures(store.db, organisationKey, EVENT_OVERHEAD_BYTES);
  return {
    things,
    events_stored_today: await usage.eventsSince(store.db, organisationKey, today),
    events_stored_this_month: await usage.eventsSince(store.db, organisationKey, month),
    api_requests_today: await usage.requestsSince(store.db, organisationKey, today),
    events_limited_today: await usage.eventsSince(store.db, organisationKey, today, 'event_limit_days'),
    storage_bytes: eventBytes + things * THING_BYTES,
    ...(await eventsLimitsOf(store.db, organisationKey, eventLimits)),
  };
}
