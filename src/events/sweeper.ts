/**
 * The retention sweeper (docs/storage.md, "The sweeper"): deletes the events and rollups that have
 * expired, so their storage is freed. Queries already leave expired data out from the moment it
 * expires (events/retention.ts); the sweeper only frees the space.
 *
 * It deletes each thing's oldest expired events in short transactions of their own, sized by the time
 * they take rather than by rows: each deletes as many rows as the previous one's pace fits in a budget
 * of 10 ms, commit included, lowering the thing's event count (and setting its last event to the
 * newest one left when that one expired) in the same transaction. Every transaction runs in a turn of
 * the event writer (`turn`), between two of the writer's transactions, so on SQLite's one connection
 * ingestion waits for one short delete at most, never for a queue of them. In the same transaction it
 * gives a few free pages of a SQLite file back to the file system (incremental vacuum), and in a turn
 * of its own after it copies the write-ahead log into the file (checkpoint), so that no commit of the
 * writer has to copy the log of many deletes at once.
 * A transaction deletes only rows whose time is before the cut and that are still there, so instances
 * sweeping the same PostgreSQL store at once, or a sweep killed part way, delete each event once and
 * never one that is kept.
 */

import { giveWay } from '../core/give-way.ts';
import { PeriodicPass } from '../core/periodic-pass.ts';
import { checkpointLog, reclaimFreePages } from '../store/dialect.ts';
import { DEFAULT_BACKGROUND_STATEMENT_MS, withStatementTimeout } from '../store/faults.ts';
import type { Store, Tx } from '../store/store.ts';
import { lastEventBefore, recordEventsRemoved, recordEventsRemovedOfThings } from '../things/service.ts';
import {
  type DroppedPartition,
  dropExpiredPartition,
  expiredPartitions,
  forgetPartition,
  isLockTimeout,
} from './partitions.ts';
import { deleteEventsBefore, type RetainedThing, retainedThings } from './repository.ts';
import { retentionCuts } from './retention.ts';
import { deleteRollupsBefore, slotOf } from './rollups.ts';
import { renewNewestEvent } from './service.ts';
import { repairTemplateRollups } from './template-rollups.ts';

/** Runs a step of the sweep in its turn among the store's writers (the event writer's `turn`). */
export type Turn = <T>(work: () => Promise<T>) => Promise<T>;

export interface SweeperOptions {
  /** Events (or rollup slots) deleted per statement: the fewest a transaction deletes. */
  step?: number;
  /** Time (ms) a transaction should take, its commit included; 0: one step per transaction. */
  budgetMs?: number;
  /** The most rows a transaction deletes, however fast they go. */
  maxRows?: number;
  /** Things read per step of the list of things under a retention. */
  thingsPerRead?: number;
  /** Free pages given back to the file system in each delete's transaction (SQLite). */
  reclaimPages?: number;
  /** The clock (ms). */
  now?: () => number;
  /** Where each transaction waits for its turn; by default it runs at once. */
  turn?: Turn;
  /** Rollups read per transaction counting template rollups again (a slot at least): about 10 ms' worth. */
  repairRows?: number;
  /**
   * The longest a statement of a sweep may wait for the database's answer (ms; store/faults.ts): one
   * that waits longer is abandoned with its connection and the sweep tried again at the next pass, so
   * that a database that hangs does not hold the sweep, and the writer's turn it runs in, for ever.
   */
  statementTimeoutMs?: number;
}

export interface SweepResult {
  events: number;
  rollups: number;
  /** Partitions of the event blocks dropped (PostgreSQL), their events counted in `events`. */
  partitions: number;
  /** Template rollup slots counted again (events/template-rollups.ts). */
  repaired: number;
}

export class RetentionSweeper {
  private readonly step: number;
  private readonly budgetMs: number;
  private readonly maxRows: number;
  /** Rows the next transaction deletes (`pace`). */
  private rowsPerTransaction: number;
  private readonly thingsPerRead: number;
  private readonly reclaimPages: number;
  private readonly now: () => number;
  private readonly turn: Turn;
  private readonly repairRows: number;
  private readonly statementTimeoutMs: number;
  private readonly passes = new PeriodicPass(() =>
    withStatementTimeout(this.statementTimeoutMs, () => this.sweepAll()),
  );

  constructor(
    private readonly store: Store,
    options: SweeperOptions = {},
  ) {
    this.statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_BACKGROUND_STATEMENT_MS;
    this.step = options.step ?? 100;
    this.budgetMs = options.budgetMs ?? 10;
    this.maxRows = options.maxRows ?? 10_000;
    this.rowsPerTransaction = this.step;
    this.thingsPerRead = options.thingsPerRead ?? 500;
    this.reclaimPages = options.reclaimPages ?? 64;
    this.now = options.now ?? Date.now;
    this.turn = options.turn ?? ((work) => work());
    this.repairRows = options.repairRows ?? 1000;
  }

  /** Sweeps every `intervalMs`, the first time one interval after the start; a failed sweep is told to `onError` and the next tries again. */
  start(intervalMs: number, onError: (error: unknown) => void): void {
    this.passes.start(intervalMs, onError);
  }

  /** Stops sweeping; waits for the transaction under way, and leaves the rest of the sweep undone. */
  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One sweep over every thing under a retention (one at a time: a sweep asked during another joins it). */
  sweep(): Promise<SweepResult> {
    return this.passes.run();
  }

  private async sweepAll(): Promise<SweepResult> {
    const swept: SweepResult = { events: 0, rollups: 0, partitions: 0, repaired: 0 };
    const now = this.now();
    if (this.store.engine === 'postgres') await this.dropPartitions(now, swept);
    let after = 0;
    while (!this.passes.stopped) {
      const things: RetainedThing[] = await this.turn(() => retainedThings(this.store.db, after, this.thingsPerRead));
      for (const thing of things) {
        const cuts = retentionCuts(thing.retentionDays, thing.rollupRetentionDays, now);
        if (cuts.events !== undefined) {
          const before = cuts.events;
          swept.events += await this.inSteps(
            (tx, limit) => deleteEventsBefore(tx, thing.thingId, before, limit),
            (tx, deleted) => this.afterEventsDeleted(tx, thing.thingId, deleted, before),
          );
        }
        if (cuts.rollups !== undefined) {
          const before = slotOf(cuts.rollups);
          swept.rollups += await this.inSteps((tx, limit) => deleteRollupsBefore(tx, thing.thingId, before, limit));
        }
        if (this.passes.stopped) break;
      }
      if (things.length < this.thingsPerRead) break;
      after = (things.at(-1) as RetainedThing).thingId;
    }
    // The template slots listed for repair, by the deletes above among others, counted again in
    // short transactions (about `repairRows` rollups read each), each in a turn of the writer.
    while (!this.passes.stopped) {
      const repaired = await this.turn(() =>
        this.store.transaction((tx) => repairTemplateRollups(tx, this.repairRows)),
      );
      if (repaired === 0) break;
      swept.repaired += repaired;
      await giveWay();
    }
    // What is still free after the deletes' own steps.
    while (!this.passes.stopped && (await this.turn(() => reclaimFreePages(this.store.db, this.reclaimPages))) > 0) {
      await giveWay();
    }
    return swept;
  }

  /**
   * On PostgreSQL, before the deletes: drops each partition of the event blocks every block of which
   * has expired (events/partitions.ts), in a transaction of its own taken as a turn of the writer, as
   * the deletes are, which lowers its things' event counts and sets their last events as the deletes
   * do (afterEventsDeleted), so a count never differs from what is stored, whenever the server stops.
   * A partition whose lock was not had in time is left to the next sweep; the deletes below then
   * take its blocks in steps meanwhile.
   */
  private async dropPartitions(now: number, swept: SweepResult): Promise<void> {
    for (const partition of await expiredPartitions(this.store.db, now)) {
      if (this.passes.stopped) return;
      let dropped: DroppedPartition | undefined;
      try {
        dropped = await this.turn(() =>
          this.store.transaction(async (tx) => {
            const removed = await dropExpiredPartition(tx, partition, now);
            if (removed) {
              await recordEventsRemovedOfThings(tx, removed.removed);
              for (const thingId of removed.lastEventExpired) {
                await renewNewestEvent(tx, thingId);
              }
            }
            return removed;
          }),
        );
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
      }
      if (dropped) {
        forgetPartition(this.store.db, partition.from);
        swept.events += dropped.events;
        swept.partitions++;
      }
      await giveWay();
    }
  }

  /**
   * In the delete's transaction: the thing counts the deleted events no more, and when its newest event
   * was among them, its newest event is the newest one left (or none), so it is never answered again.
   */
  private async afterEventsDeleted(tx: Tx, thingId: number, deleted: number, before: number): Promise<void> {
    await recordEventsRemoved(tx, thingId, deleted);
    if (await lastEventBefore(tx, thingId, before)) {
      await renewNewestEvent(tx, thingId);
    }
  }

  /**
   * Deletes in transactions of about `budgetMs` each, until all that expired is gone (a step deletes
   * less than a whole one); answers how many were deleted. A transaction's time, commit included, is
   * mostly its rows' (on SQLite each deleted event rewrites a page, a thing's events being spread among
   * every other thing's), so each transaction deletes as many rows as the previous one's pace says fit
   * in the budget, steps of `step` rows at a time, and stops early if the budget is spent anyway.
   */
  private async inSteps(
    remove: (tx: Tx, limit: number) => Promise<number>,
    after?: (tx: Tx, deleted: number) => Promise<void>,
  ): Promise<number> {
    let total = 0;
    let more = true;
    while (more && !this.passes.stopped) {
      const target = this.rowsPerTransaction;
      let began = 0;
      const deleted = await this.turn(() => {
        began = performance.now();
        return this.store.transaction(async (tx) => {
          let count = 0;
          do {
            const limit = Math.min(this.step, target - count);
            const step = await remove(tx, limit);
            count += step;
            // A whole block counts all its events: a step may delete more than its limit.
            more = step >= limit;
          } while (more && count < target && performance.now() - began < this.budgetMs);
          if (count > 0) {
            await after?.(tx, count);
            await reclaimFreePages(tx, this.reclaimPages);
          }
          return count;
        });
      });
      total += deleted;
      const took = performance.now() - began;
      await giveWay();
      if (deleted === 0) continue;
      // The log of the delete's pages is copied into the file in a turn of its own, a step's worth at a
      // time, rather than by one of the writer's commits all at once.
      const copied = await this.turn(async () => {
        const at = performance.now();
        await checkpointLog(this.store.db);
        return performance.now() - at;
      });
      if (more) this.pace(deleted, Math.max(took, copied));
      await giveWay();
    }
    return total;
  }

  /** The next transaction's rows: as many as the last one's pace fits in the budget, at most twice as many. */
  private pace(rows: number, ms: number): void {
    const fit = Math.floor((rows * this.budgetMs) / Math.max(ms, 0.1));
    this.rowsPerTransaction = Math.max(this.step, Math.min(fit, rows * 2, this.maxRows));
  }
}
