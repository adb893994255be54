/**
 * The retention sweeper (docs/storage.md, "The sweeper"): deletes the events and rollups that have
 * expired, so their storage is freed. Queries already leave expired data out from the moment it
 * expires (events/retention.ts); the sweeper only frees the space.
 *
 * It deletes each thing's oldest expired events in small transactions of their own (a thing's event
 * count goes down in the same one, and its last event becomes the newest one left when it expired), giving way between them, so on SQLite's one connection the event
 * writer's transactions run in between and ingestion stalls for one small delete at most. After each
 * delete it gives a few free pages of a SQLite file back to the file system (incremental vacuum).
 * A transaction deletes only rows whose time is before the cut and that are still there, so instances
 * sweeping the same PostgreSQL store at once, or a sweep killed part way, delete each event once and
 * never one that is kept.
 */
import { reclaimFreePages } from '../store/dialect.ts';
import type { Store, Tx } from '../store/store.ts';
import { lastEventBefore, recordEventsRemoved, recordNewestEvent } from '../things/service.ts';
import { deleteEventsBefore, newestEvent, retainedThings } from './repository.ts';
import { retentionCuts } from './retention.ts';
import { deleteRollupsBefore, slotOf } from './rollups.ts';

export interface SweeperOptions {
  /** Events (or rollup slots) deleted per transaction. */
  chunk?: number;
  /** Free pages given back to the file system after each delete (SQLite). */
  reclaimPages?: number;
  /** The clock (ms). */
  now?: () => number;
}

export interface SweepResult {
  events: number;
  rollups: number;
}

/** Lets other work (the event writer's transactions, requests) run before the next step. */
const giveWay = () => new Promise<void>((resolve) => setImmediate(resolve));

export class RetentionSweeper {
  private readonly chunk: number;
  private readonly reclaimPages: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;
  private stopped = false;

  constructor(
    private readonly store: Store,
    options: SweeperOptions = {},
  ) {
    this.chunk = options.chunk ?? 1000;
    this.reclaimPages = options.reclaimPages ?? 64;
    this.now = options.now ?? Date.now;
  }

  /** Sweeps every `intervalMs`, the first time one interval after the start; a failed sweep is told to `onError` and the next tries again. */
  start(intervalMs: number, onError: (error: unknown) => void): void {
    const run = () => {
      this.timer = undefined;
      void this.sweep()
        .catch(onError)
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(run, intervalMs).unref();
        });
    };
    this.timer = setTimeout(run, intervalMs).unref();
  }

  /** Stops sweeping; waits for the transaction under way, and leaves the rest of the sweep undone. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One sweep over every thing under a retention (one at a time: a sweep asked during another joins it). */
  sweep(): Promise<SweepResult> {
    this.running ??= this.sweepAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async sweepAll(): Promise<SweepResult> {
    const swept: SweepResult = { events: 0, rollups: 0 };
    const now = this.now();
    for (const thing of await retainedThings(this.store.db)) {
      const cuts = retentionCuts(thing.retentionDays, thing.rollupRetentionDays, now);
      if (cuts.events !== undefined) {
        const before = cuts.events;
        swept.events += await this.inChunks(
          (tx) => deleteEventsBefore(tx, thing.thingId, before, this.chunk),
          (tx, deleted) => this.afterEventsDeleted(tx, thing.thingId, deleted, before),
        );
      }
      if (cuts.rollups !== undefined) {
        const before = slotOf(cuts.rollups);
        swept.rollups += await this.inChunks((tx) => deleteRollupsBefore(tx, thing.thingId, before, this.chunk));
      }
      if (this.stopped) break;
    }
    // What is still free after the deletes' own steps.
    while (!this.stopped && (await reclaimFreePages(this.store.db, this.reclaimPages)) > 0) await giveWay();
    return swept;
  }

  /**
   * In the delete's transaction: the thing counts the deleted events no more, and when its newest event
   * was among them, its newest event is the newest one left (or none), so it is never answered again.
   */
  private async afterEventsDeleted(tx: Tx, thingId: number, deleted: number, before: number): Promise<void> {
    await recordEventsRemoved(tx, thingId, deleted);
    if (await lastEventBefore(tx, thingId, before)) {
      await recordNewestEvent(tx, thingId, (await newestEvent(tx, thingId)) ?? null);
    }
  }

  /** Deletes chunk after chunk, each in its own transaction, until one deletes less than a whole chunk. */
  private async inChunks(
    remove: (tx: Tx) => Promise<number>,
    after?: (tx: Tx, deleted: number) => Promise<void>,
  ): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await this.store.transaction(async (tx) => {
        const count = await remove(tx);
        if (count > 0) await after?.(tx, count);
        return count;
      });
      total += deleted;
      if (deleted > 0) await reclaimFreePages(this.store.db, this.reclaimPages);
      await giveWay();
      if (deleted < this.chunk || this.stopped) return total;
    }
  }
}
