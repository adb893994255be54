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
import { claimDueDeliveries, finishDelivery, releaseClaims } from './repository.ts';
import type { Delivery, Senders } from './senders.ts';
import type { DeliveryPayload } from './service.ts';

const POLL_MS = 500;
/** The longest wait between runs while the store fails (ms): a failed run doubles the wait up to it. */
const MAX_FAILED_POLL_MS = 30_000;
/** The first wait before recording an attempt again when the store failed to (ms); it doubles. */
const RECORD_RETRY_MS = 200;
const BATCH = 20;
const CONCURRENCY = 4;
const MAX_BACKOFF_MS = 60 * 60 * 1000;

export class DeliveryWorker {
  readonly instance = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
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
    if (this.running) this.again = true;
    else this.schedule(0);
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
   * Claims and carries out due deliveries until none is due. A lane that fails (the store down) ends
   * the run only once every other lane is done, so nothing of the run outlives it (or a stop).
   */
  async runOnce(): Promise<void> {
    for (;;) {
      const { rows: claimed, claimedUntil } = await this.claim();
      if (claimed.length === 0) return;
      const queue = [...claimed];
      const lanes = await Promise.allSettled(
        Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
          for (let row = queue.shift(); row; row = queue.shift()) await this.deliver(row, claimedUntil);
        }),
      );
      const failed = lanes.find((lane) => lane.status === 'rejected');
      if (failed) throw failed.reason;
      if (this.stopped || claimed.length < BATCH) return;
    }
  }

  private async claim(): Promise<{ rows: DeliveryRow[]; claimedUntil: number }> {
    const now = Date.now();
    // Longer than one attempt can take, so a live claim never lapses mid-attempt.
    const claimedUntil = now + this.config.deliveryTimeoutMs * 3 + 5000;
    const rows = await this.store.transaction((tx) =>
      claimDueDeliveries(tx, { instance: this.instance, now, claimedUntil, limit: BATCH }),
    );
    return { rows, claimedUntil };
  }

  private async deliver(row: DeliveryRow, claimedUntil: number): Promise<void> {
    const action = await findAction(this.store.db, this.box, [row.organisation_key], row.notification_action_key);
    if (!action) {
      await this.finish(row, 'cancelled', undefined, 0);
      this.onFinished?.('unknown', 'cancelled');
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

/** base, 2 x base, 4 x base, ... up to an hour, with up to 20% jitter so retries spread out. */
export function backoff(baseMs: number, attempt: number): number {
  const delay = Math.min(baseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
  return Math.round(delay * (1 + Math.random() * 0.2));
}
