/**
 * Drains the delivery queue (docs/rules.md, "Deliveries"; docs/configuration.md, "Notification
 * deliveries"). Each instance claims due deliveries with a lease (on PostgreSQL with `FOR UPDATE SKIP
 * LOCKED`, so instances never claim the same row), carries them out, and records every attempt. A
 * failed attempt is retried with exponential backoff until the attempt limit; a claim left by an
 * instance that died returns to the queue when its lease runs out (on SQLite, whose store one process
 * owns, at the next start). The queue's SQL is in repository.ts.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { findAction } from '../actions/service.ts';
import type { Config } from '../core/config.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { storeFaultOf, withStatementTimeout } from '../store/faults.ts';
import type { Store } from '../store/store.ts';
import type { DeliveryRow } from '../store/tables.ts';
import { isUndeliverable } from './address-guard.ts';
import { claimDueDeliveries, finishDelivery, releaseClaim, releaseClaims } from './repository.ts';
import type { Delivery, Senders } from './senders.ts';
import type { DeliveryPayload } from './service.ts';

const POLL_MS = 500;
/** The longest wait between runs while the store fails (ms): a failed run doubles the wait up to it. */
const MAX_FAILED_POLL_MS = 30_000;
/** The first wait before recording an attempt again when the store failed to (ms); it doubles. */
const RECORD_RETRY_MS = 200;
/** Deliveries an instance carries out at once. */
const CONCURRENCY = 8;
/**
 * Of them, at most this many of one action: the deliveries of an action whose peer hangs (a rule firing
 * for many things) hold no more lanes than this, and the others' go on.
 */
const PER_ACTION = 2;
/**
 * And at most this many to one destination (an HTTP host, the SMTP server, the SMS gateway): many
 * actions calling one hung host hold no more lanes than this, and the other destinations' go on.
 */
const PER_DESTINATION = 4;
const MAX_BACKOFF_MS = 60 * 60 * 1000;

export class DeliveryWorker {
  readonly instance = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Wakes a run waiting for its lanes: something was queued. */
  private nudge: (() => void) | undefined;
  private stopped = false;
  /** Runs failed in a row (the store down): the next waits longer. */
  private failedRuns = 0;

  constructor(
    private readonly store: Store,
    /** Opens the actions' credentials (docs/rules.md, "Notification actions"). */
    private readonly box: SecretBox,
    private readonly senders: Senders,
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    /** Told each delivery's outcome: the action's type, and delivered, pending (to retry), failed or cancelled. */
    private readonly onFinished?: (kind: string, status: string) => void,
  ) {}

  async start(): Promise<void> {
    if (this.store.engine === 'sqlite') {
      // One process owns a SQLite store: claims still held are from a process that is gone.
      await releaseClaims(this.store.db);
    }
    this.schedule(0);
  }

  /** Looks for due deliveries now (something was just queued). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      this.nudge?.();
    } else this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Each statement waits for the database at most DATABASE_STATEMENT_TIMEOUT_MS: one that hangs
      // fails the run, which is tried again later, instead of holding the worker (and a stop) for ever.
      this.running = withStatementTimeout(this.config.databaseStatementTimeoutMs, () => this.runOnce())
        .then(() => {
          this.failedRuns = 0;
        })
        .catch((error) => {
          this.failedRuns++;
          // The store's faults (the database down, a full disk) are logged once a minute by the store.
          if (this.store.faults.note(error) === undefined) this.log.error(error, 'delivery worker failed');
        })
        .finally(() => {
          this.running = undefined;
          const again = this.again && this.failedRuns === 0;
          this.again = false;
          this.schedule(again ? 0 : Math.min(POLL_MS * 2 ** this.failedRuns, MAX_FAILED_POLL_MS));
        });
    }, delayMs);
    this.timer.unref();
  }

  /**
   * Claims and carries out due deliveries until none is due, up to CONCURRENCY at once (PER_ACTION of
   * one action, PER_DESTINATION to one destination: a delivery found bound for a destination at its
   * lanes gives its claim back, and its action is passed over until a lane of that destination ends): each lane that ends takes the next due, and what is queued or comes due meanwhile
   * starts as soon as a lane is free, not after those before it. A failure (the store down) stops the
   * claims and ends the run once every lane is done, so nothing of the run outlives it (or a stop).
   */
  async runOnce(): Promise<void> {
    const lanes = new Set<Promise<void>>();
    const ofAction = new Map<string, number>();
    const ofDestination = new Map<string, number>();
    /** Each action's destination, as its deliveries of this run found it. */
    const destinationOf = new Map<string, string>();
    let failure: { error: unknown } | undefined;
    /** Ends the wait for the lanes. */
    let signal: (() => void) | undefined;
    const fullDestination = (destination: string | undefined) =>
      destination !== undefined && (ofDestination.get(destination) ?? 0) >= PER_DESTINATION;
    for (;;) {
      if (!this.stopped && failure === undefined && lanes.size < CONCURRENCY) {
        const busy = [...ofAction].filter(([, count]) => count >= PER_ACTION).map(([key]) => key);
        for (const [action, destination] of destinationOf) {
          if (fullDestination(destination) && !busy.includes(action)) busy.push(action);
        }
        let claimed: { row: DeliveryRow; claimedUntil: number } | undefined;
        try {
          claimed = await this.claim(busy);
        } catch (error) {
          failure = { error };
        }
        if (claimed) {
          const { row, claimedUntil } = claimed;
          const key = row.notification_action_key;
          ofAction.set(key, (ofAction.get(key) ?? 0) + 1);
          let counted: string | undefined;
          /** Whether the delivery may go to `destination` now: else its claim is given back, unattempted. */
          const admit = (destination: string | undefined) => {
            if (destination === undefined) return true;
            destinationOf.set(key, destination);
            if (fullDestination(destination)) return false;
            ofDestination.set(destination, (ofDestination.get(destination) ?? 0) + 1);
            counted = destination;
            return true;
          };
          const lane: Promise<void> = this.deliver(row, claimedUntil, admit)
            .catch((error: unknown) => {
              failure ??= { error };
            })
            .finally(() => {
              lanes.delete(lane);
              const left = (ofAction.get(key) ?? 1) - 1;
              if (left > 0) ofAction.set(key, left);
              else ofAction.delete(key);
              if (counted !== undefined) ofDestination.set(counted, (ofDestination.get(counted) ?? 1) - 1);
              signal?.();
            });
          lanes.add(lane);
          continue;
        }
      }
      if (lanes.size === 0) break;
      // Until a lane ends, something is queued, or a retry may have come due.
      await new Promise<void>((resolve) => {
        const poll = setTimeout(resolve, POLL_MS);
        signal = () => {
          clearTimeout(poll);
          resolve();
        };
        this.nudge = signal;
      });
      signal = undefined;
      this.nudge = undefined;
    }
    if (failure) throw failure.error;
  }

  /**
   * Claims the next due delivery, of an action not in `busy`, for as long as one attempt may take from
   * now: each is claimed as its attempt starts, so a claim never lapses while its delivery waits for a
   * lane or is carried out (another instance would then send it again).
   */
  private async claim(busy: readonly string[]): Promise<{ row: DeliveryRow; claimedUntil: number } | undefined> {
    const now = Date.now();
    const claimedUntil = now + this.config.deliveryTimeoutMs * 3 + 5000;
    const [row] = await this.store.transaction((tx) =>
      claimDueDeliveries(tx, { instance: this.instance, now, claimedUntil, limit: 1, exceptActions: busy }),
    );
    return row && { row, claimedUntil };
  }

  private async deliver(
    row: DeliveryRow,
    claimedUntil: number,
    admit: (destination: string | undefined) => boolean,
  ): Promise<void> {
    const action = await findAction(this.store.db, this.box, [row.organisation_key], row.notification_action_key);
    if (!action) {
      await this.finish(row, 'cancelled', undefined, 0);
      this.onFinished?.('unknown', 'cancelled');
      return;
    }
    if (!admit(destinationOf(action))) {
      await releaseClaim(this.store.db, row.delivery_key, this.instance);
      return;
    }
    const delivery: Delivery = {
      deliveryKey: row.delivery_key,
      organisationKey: row.organisation_key,
      action,
      payload: JSON.parse(row.payload) as DeliveryPayload,
    };
    const started = Date.now();
    let status: 'delivered' | 'pending' | 'failed' = 'delivered';
    let reason: string | undefined;
    try {
      await this.senders.send(delivery);
    } catch (error) {
      reason = error instanceof Error ? error.message : String(error);
      const attempts = row.attempts + 1;
      const final = attempts >= this.config.deliveryMaxAttempts || isUndeliverable(error);
      status = final ? 'failed' : 'pending';
      this.log.warn(
        { delivery: row.delivery_key, attempt: attempts, reason },
        final ? 'notification delivery failed, not retried' : 'notification delivery failed',
      );
    }
    // What the peer was sent is recorded as sent even if the store fails to take it at once: a
    // delivery recorded failed would be sent again.
    await this.recordWithin(claimedUntil, () => this.finish(row, status, reason, Date.now() - started));
    this.onFinished?.(action.type, status);
  }

  /**
   * Records an attempt, trying again while the store is down (a failover, a restart) and the claim
   * holds; past that the claim lapses and the delivery is due again, under the same idempotency key.
   */
  private async recordWithin(claimedUntil: number, record: () => Promise<void>): Promise<void> {
    for (let wait = RECORD_RETRY_MS; ; wait *= 2) {
      try {
        await record();
        return;
      } catch (error) {
        if (storeFaultOf(error) === undefined || this.stopped || Date.now() + wait >= claimedUntil - 1000) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** Records the attempt and the delivery's new state together; only while this instance holds the claim. */
  private async finish(
    row: DeliveryRow,
    status: 'delivered' | 'pending' | 'failed' | 'cancelled',
    error: string | undefined,
    durationMs: number,
  ): Promise<void> {
    const now = Date.now();
    const attempt = row.attempts + 1;
    await this.store.transaction(async (tx) => {
      await finishDelivery(tx, row, this.instance, {
        status,
        attempts: status === 'cancelled' ? row.attempts : attempt,
        nextAttemptAt: status === 'pending' ? now + backoff(this.config.deliveryRetryBaseMs, attempt) : now,
        now,
        ...(status === 'cancelled'
          ? {}
          : {
              attempt: {
                number: attempt,
                status: status === 'delivered' ? 'delivered' : 'failed',
                error: error ? error.slice(0, 500) : null,
                durationMs,
              },
            }),
      });
    });
  }
}

/**
 * Where an action's deliveries go, for PER_DESTINATION: an HTTP call's host, the SMTP server for e-mail,
 * the SMS gateway; none for a change of the thing's own properties, which calls nobody.
 */
function destinationOf(action: { type: string; url: string | null }): string | undefined {
  if (action.type === 'EmailNotificationAction') return 'smtp';
  if (action.type === 'SMSNotificationAction') return 'sms';
  if (action.type !== 'CallHttpUrlAction') return undefined;
  try {
    return `http ${new URL((action.url ?? '').replace(/\$(THING|SENSOR)\$/g, 'thing')).host}`;
  } catch {
    return undefined;
  }
}

/** base, 2 x base, 4 x base, ... up to an hour, with up to 20% jitter so retries spread out. */
export function backoff(baseMs: number, attempt: number): number {
  const delay = Math.min(baseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
  return Math.round(delay * (1 + Math.random() * 0.2));
}
