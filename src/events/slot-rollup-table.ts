/**
 * A table of slot rollups: one row per key (a thing, or a template) and 15-minute slot, its stats as
 * JSON (slot-stats.ts). The things' rollups (rollups.ts) and the templates' (template-rollups.ts) are
 * two such tables, merged into the same way as events are stored (docs/storage.md).
 */
import { engineOfDb, RowsStatement } from '../store/dialect.ts';
import type { Executor } from '../store/store.ts';
import { mergeSlotStats, parseSlotStats, type SlotStats } from './slot-stats.ts';

export class SlotRollupTable {
  /** Inserts the rows (key, slot, stats JSON) not stored yet; answers those it inserted (key, slot). */
  readonly insertNew: RowsStatement;
  /** Reads the stored rows of (key, slot), locked for update (PostgreSQL). */
  readonly readLocked: RowsStatement;
  /** Sets the stats of stored rows (key, slot, stats JSON). */
  readonly update: RowsStatement;
  private readonly insertOrMerge: RowsStatement;

  constructor(table: string, key: string, keyType: 'bigint' | 'text') {
    const types = [keyType, 'bigint', 'text'] as const;
    this.insertNew = new RowsStatement(
      types,
      () => `insert into ${table} (${key}, slot, stats)
        select v.column1, v.column2, v.column3 from v where true
        on conflict (${key}, slot) do nothing
        returning ${key} as key, slot`,
    );
    this.insertOrMerge = new RowsStatement(
      types,
      () => `insert into ${table} (${key}, slot, stats)
        select v.column1, v.column2, v.column3 from v where true
        on conflict (${key}, slot) do update set stats = merge_slot_stats(${table}.stats, excluded.stats)`,
    );
    this.readLocked = new RowsStatement(
      [keyType, 'bigint'],
      () => `select r.${key} as key, r.slot, r.stats from v cross join ${table} r
        where r.${key} = v.column1 and r.slot = v.column2 order by r.${key}, r.slot for update of r`,
    );
    this.update = new RowsStatement(
      types,
      () => `update ${table} set stats = v.column3 from v
        where ${table}.${key} = v.column1 and ${table}.slot = v.column2`,
    );
  }

  /**
   * Merges counted slots into the stored rows. On SQLite in one statement: new slots are inserted, and
   * existing ones merged in place by the store's SQL function `merge_slot_stats`. On PostgreSQL in
   * three, whatever the number of slots: new slots are inserted; existing ones are read (locked, so
   * instances writing one key at once add up instead of overwriting), merged and written back.
   */
  async add(db: Executor, counted: readonly { key: number | string; slot: number; stats: SlotStats }[]): Promise<void> {
    if (counted.length === 0) return;
    const columns = (rows: readonly { key: number | string; slot: number; stats: SlotStats }[]) => [
      rows.map((r) => r.key),
      rows.map((r) => r.slot),
      rows.map((r) => JSON.stringify(r.stats)),
    ];
    if (engineOfDb(db) === 'sqlite') return void (await this.insertOrMerge.run(db, columns(counted)));
    // Keys come back as strings where they are bigints; both sides are compared as text.
    const id = (key: number | string, slot: number | string) => `${key}:${Number(slot)}`;
    const inserted = await this.insertNew.run<{ key: number | string; slot: number | string }>(db, columns(counted));
    if (inserted.length === counted.length) return;
    const fresh = new Set(inserted.map((r) => id(r.key, r.slot)));
    const existing = counted.filter((r) => !fresh.has(id(r.key, r.slot)));
    const stored = await this.readLocked.run<{ key: number | string; slot: number | string; stats: string }>(db, [
      existing.map((r) => r.key),
      existing.map((r) => r.slot),
    ]);
    const storedStats = new Map(stored.map((r) => [id(r.key, r.slot), r.stats]));
    const merged = existing.map((r) => {
      const before = storedStats.get(id(r.key, r.slot));
      return { ...r, stats: before === undefined ? r.stats : mergeSlotStats(parseSlotStats(before), r.stats) };
    });
    await this.update.run(db, columns(merged));
  }
}
