/**
 * Limits an operator sets on events (docs/operations.md, "Admission of events"): events a second per
 * organisation (EVENTS_PER_SECOND_PER_ORGANISATION, or the organisation's own `events_per_second`
 * set by its parent) and per key pair (EVENTS_PER_SECOND_PER_KEY_PAIR). Beyond them a request or
 * message is refused with 429 and the seconds to wait (Retry-After over HTTP, `retry_after` on
 * httpAck), and nothing of it is stored: unlike "server busy" (503), this is the sender's own limit.
 *
 * Each limit is a bucket holding a second of events, refilled at the limit's rate. A batch is taken
 * when the bucket holds as many events as the batch has (or a full second's worth, for a bulk larger
 * than a second of the limit, which then leaves the bucket in debt): over any stretch of time the
 * events taken average the limit. Counted per instance (the limit is each instance's, as the writer
 * behind it is). Buckets full again are forgotten, so memory follows who sent in the last seconds.
 */
import { ApiError } from '../core/errors.ts';
import type { Principal } from '../core/principal.ts';

export interface EventLimitSettings {
  /** Events a second per organisation without a value of its own; 0 = none. */
  perOrganisation: number;
  /** Events a second per key pair; 0 = none. */
  perKeyPair: number;
}

/** Which limit refused a batch. */
export type EventLimitKind = 'organisation' | 'key_pair';

interface Bucket {
  /** Events it holds (negative: in debt), as of `at`. */
  events: number;
  at: number;
  perSecond: number;
}

/** How often buckets full again are forgotten (ms). */
const PRUNE_EVERY_MS = 10_000;

/** Token buckets of one kind, by key. */
export class EventBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private prunedAt = 0;

  /** Seconds to wait before `count` events may be taken at `perSecond`; 0 when they may now. */
  waitSeconds(key: string, perSecond: number, count: number, now: number): number {
    const held = this.held(key, perSecond, now);
    const needed = Math.min(count, perSecond);
    return held >= needed ? 0 : (needed - held) / perSecond;
  }

  take(key: string, perSecond: number, count: number, now: number): void {
    // The bucket is looked up once and changed in place: taken for every message of every device.
    const bucket = this.buckets.get(key);
    const events = (bucket ? refilled(bucket, perSecond, now) : perSecond) - count;
    if (bucket) {
      bucket.events = events;
      bucket.at = now;
      bucket.perSecond = perSecond;
    } else {
      this.buckets.set(key, { events, at: now, perSecond });
    }
    if (now - this.prunedAt >= PRUNE_EVERY_MS) this.prune(now);
  }

  get size(): number {
    return this.buckets.size;
  }

  private held(key: string, perSecond: number, now: number): number {
    const bucket = this.buckets.get(key);
    return bucket ? refilled(bucket, perSecond, now) : perSecond;
  }

  /** Forgets buckets that have refilled: they hold what a new one would. */
  private prune(now: number): void {
    this.prunedAt = now;
    for (const [key, bucket] of this.buckets) {
      if (refilled(bucket, bucket.perSecond, now) >= bucket.perSecond) this.buckets.delete(key);
    }
  }
}

const refilled = (bucket: Bucket, perSecond: number, now: number): number =>
  Math.min(perSecond, bucket.events + ((now - bucket.at) / 1000) * perSecond);

export class EventLimits {
  private readonly organisations = new EventBuckets();
  private readonly keyPairs = new EventBuckets();

  constructor(
    private readonly settings: EventLimitSettings,
    /** An organisation's own `events_per_second` (null: the default), read through a cache. */
    private readonly organisationValue: (organisationKey: string) => number | null | Promise<number | null>,
    /** Told each refusal: whose limit and how many events, for metrics, usage and the log. */
    private readonly onRefused: (organisationKey: string, limit: EventLimitKind, events: number) => void,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Takes `count` events of the principal, or throws the 429 of the limit they pass: at once when the
   * organisation's own limit is known without reading the store (then answers undefined), else once it
   * is read (then answers the promise of that, rejected with the 429).
   */
  take(principal: Principal, count: number): Promise<void> | undefined {
    const own = this.organisationValue(principal.organisationKey);
    if (own !== null && typeof own === 'object') return own.then((value) => this.takeNow(principal, count, value));
    this.takeNow(principal, count, own);
    return undefined;
  }

  private takeNow(principal: Principal, count: number, own: number | null): void {
    const perOrganisation = own ?? this.settings.perOrganisation;
    const perKeyPair = principal.accessKey === undefined ? 0 : this.settings.perKeyPair;
    if (perOrganisation === 0 && perKeyPair === 0) return;
    const now = this.clock();
    const organisationWait =
      perOrganisation > 0 ? this.organisations.waitSeconds(principal.organisationKey, perOrganisation, count, now) : 0;
    if (organisationWait > 0) {
      this.onRefused(principal.organisationKey, 'organisation', count);
      throw limitReached(`the organisation's limit of ${perOrganisation} events a second`, organisationWait);
    }
    const keyPair = principal.accessKey as string;
    const keyPairWait = perKeyPair > 0 ? this.keyPairs.waitSeconds(keyPair, perKeyPair, count, now) : 0;
    if (keyPairWait > 0) {
      this.onRefused(principal.organisationKey, 'key_pair', count);
      throw limitReached(`the key pair's limit of ${perKeyPair} events a second`, keyPairWait);
    }
    if (perOrganisation > 0) this.organisations.take(principal.organisationKey, perOrganisation, count, now);
    if (perKeyPair > 0) this.keyPairs.take(keyPair, perKeyPair, count, now);
  }
}

function limitReached(limit: string, waitSeconds: number): ApiError {
  const seconds = Math.max(1, Math.ceil(waitSeconds));
  const message = `${limit} is reached; send again in ${seconds} s`;
  return new ApiError(429, [{ code: 'rate_limited', message }], message, { 'retry-after': String(seconds) });
}
