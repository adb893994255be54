/**
 * The compactor (docs/storage.md, "The compact event store"): turns each thing's events older than
 * EVENT_COMPACTION_AGE from rows into blocks (events/blocks.ts), an hour of event time at most per
 * block, so they take a few bytes each instead of about a hundred.
 *
 * Like the retention sweeper it runs in the background, one block per transaction, giving way between
 * them: the block is encoded before its transaction, which only deletes the rows and writes the block,
 * so on SQLite's one connection ingestion waits for that at most. A transaction deletes exactly the
 * rows it read or nothing (CompactionConflict rolls it back), so a compaction killed part way, or
 * instances compacting the same PostgreSQL store at once, leave each event a row or in one block.
 */
import { giveWay } from '../core/give-way.ts';
import { PeriodicPass } from '../core/periodic-pass.ts';
import { DEFAULT_BACKGROUND_STATEMENT_MS, withStatementTimeout } from '../store/faults.ts';
import type { Store } from '../store/store.ts';
import { blockRow } from './blocks.ts';
import { ensurePartition, forgetPartition, isMissingPartition } from './partitions.ts';
import { CompactionConflict, oldestRows, replaceRowsByBlock } from './repository.ts';

const HOUR_MS = 3_600_000;

export interface CompactorOptions {
  /** Events older than this (ms, by event time) are compacted; 0: every event once stored. */
  ageMs: number;
  /**
   * The share of the time a background pass works: after each block it rests so that its work is at
   * most this share of the pass (the process's one thread also serves ingestion and requests).
   */
  share?: number;
  /** The clock (ms). */
  now?: () => number;
  /**
   * The longest a statement of a pass may wait for the database's answer (ms; store/faults.ts): one
   * that waits longer is abandoned with its connection and the pass tried again at the next one, so
   * that a database that hangs does not hold the compactor for ever.
   */
  statementTimeoutMs?: number;
}

/**
 * A background pass works a twentieth of the time at most: encoding a block holds the process's one
 * thread for tens of milliseconds, and on SQLite the pass shares the one connection with ingestion.
 */
const DEFAULT_SHARE = 0.05;

export class EventCompactor {
  private readonly ageMs: number;
  private readonly share: number;
  private readonly now: () => number;
  private readonly statementTimeoutMs: number;
  private readonly passes = new PeriodicPass(() =>
    withStatementTimeout(this.statementTimeoutMs, () => this.compactAll()),
  );

  constructor(
    private readonly store: Store,
    options: CompactorOptions,
  ) {
    this.statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_BACKGROUND_STATEMENT_MS;
    this.ageMs = options.ageMs;
    this.share = options.share ?? DEFAULT_SHARE;
    this.now = options.now ?? Date.now;
  }

  /** Compacts every `intervalMs`, the first time one interval after the start; a failed pass is told to `onError`. */
  start(intervalMs: number, onError: (error: unknown) => void): void {
    this.passes.start(intervalMs, onError);
  }

  /** Stops compacting; waits for the block under way, and leaves the rest undone. */
  stop(): Promise<void> {
    return this.passes.stop();
  }

  /** One pass over every thing (one at a time: a pass asked during another joins it); answers the events compacted. */
  compact(): Promise<number> {
    return this.passes.run();
  }

  /**
   * Blocks end at whole hours of event time before the age, so an hour becomes one block, not one per
   * pass; with an age of 0 every event is compacted at once (for tests: docs/configuration.md).
   */
  private cut(): number {
    if (this.ageMs === 0) return Number.MAX_SAFE_INTEGER;
    return Math.floor((this.now() - this.ageMs) / HOUR_MS) * HOUR_MS;
  }

  private async compactAll(): Promise<number> {
    const things = await this.store.db.selectFrom('things').select('thing_id').orderBy('thing_id').execute();
    return this.compactThings(
      things.map((t) => Number(t.thing_id)),
      true,
    );
  }

  /** Compacts these things' events that are old enough; answers how many. Paced: resting between blocks. */
  async compactThings(thingIds: Iterable<number>, paced = false): Promise<number> {
    let compacted = 0;
    const before = this.cut();
    for (const thingId of thingIds) {
      for (;;) {
        if (this.passes.stopped) return compacted;
        const started = performance.now();
        const events = await oldestRows(this.store.db, thingId, before);
        if (events.length === 0) break;
        const block = blockRow(thingId, events);
        // On PostgreSQL its month's partition first (docs/storage.md, "Partitions"); when the table's
        // lock is not had in time, the thing is left for the next pass.
        if (!(await ensurePartition(this.store, block.min_timestamp))) break;
        try {
          await this.store.transaction((tx) => replaceRowsByBlock(tx, events, block));
        } catch (error) {
          // Someone else took these rows: this thing is left for the next pass.
          if (error instanceof CompactionConflict) break;
          // Another instance's sweeper dropped the partition meanwhile: made again, and tried again.
          if (isMissingPartition(error)) {
            forgetPartition(this.store.db, block.min_timestamp);
            continue;
          }
          throw error;
        }
        compacted += events.length;
        if (paced && this.share < 1) {
          const worked = performance.now() - started;
          await new Promise((resolve) => setTimeout(resolve, (worked * (1 - this.share)) / this.share));
        } else {
          await giveWay();
        }
      }
    }
    return compacted;
  }
}
