/**
 * Rollups: for each thing and each 15-minute slot of UTC time, the count, sum, min and max of each of
 * its template's metrics over the events in that slot. They are written in the transaction that stores
 * the events, so an aggregated query whose buckets fall on slot boundaries (15 minutes and any
 * multiple, hours and days in every zone whose offset is a multiple of 15 minutes) reads one row per
 * slot instead of every event (queries/aggregation.ts).
 *
 * What a slot's stats cover is exact: a metric is named in them only if every event of the slot was
 * counted for it. Events add the metrics of their thing's template as the writer checked it; when
 * events of one slot were counted for different metric lists (the template changed, or the thing moved
 * to another template), only the metrics common to both stay. A query for a metric a slot does not
 * name reads that thing's events instead, so the answer is the same either way.
 */
import { readPath } from '../expressions/index.ts';
import { engineOfDb, jsonRowsText, RowsStatement } from '../store/dialect.ts';
import { QueryCache } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';
import { eventChunks } from './repository.ts';
import { SlotRollupTable } from './slot-rollup-table.ts';
import { emptyStats, type MetricStats, type SlotStats } from './slot-stats.ts';
import { markThingSlots } from './template-rollups.ts';

/** A slot's length: 15 minutes, on multiples of 15 minutes since the epoch. */
export const SLOT_MS = 15 * 60_000;

export const slotOf = (at: number): number => Math.floor(at / SLOT_MS) * SLOT_MS;

/** A template's metric names and their paths (docs/api.md, "Data queries": dots reach into nested objects). */
interface MetricPaths {
  names: string[];
  paths: string[][];
}

const pathsByText = new Map<string, MetricPaths>();

/** The metric names of a template's metrics (their JSON text), worked out once per text. */
export function metricPaths(metricsText: string): MetricPaths {
  let found = pathsByText.get(metricsText);
  if (!found) {
    const names = (JSON.parse(metricsText) as { name: string }[]).map((m) => m.name);
    found = { names, paths: names.map((name) => name.split('.')) };
    if (pathsByText.size >= 1000) pathsByText.clear();
    pathsByText.set(metricsText, found);
  }
  return found;
}

export interface SlotRow {
  thingId: number;
  slot: number;
  stats: SlotStats;
}

/** Counts events into slots, per thing. */
export class SlotCounter {
  private readonly byThing = new Map<number, Map<number, SlotStats>>();

  add(thingId: number, metrics: MetricPaths, at: number, data: Record<string, unknown>): void {
    let slots = this.byThing.get(thingId);
    if (!slots) {
      slots = new Map();
      this.byThing.set(thingId, slots);
    }
    const slot = slotOf(at);
    let stats = slots.get(slot);
    if (!stats) {
      stats = emptyStats();
      for (const name of metrics.names) stats[name] = [0, 0, null, null];
      slots.set(slot, stats);
    }
    for (let i = 0; i < metrics.names.length; i++) {
      const value = readPath(data, metrics.paths[i] as string[]);
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const s = stats[metrics.names[i] as string] as MetricStats;
      s[0] += 1;
      // Counted in memory from 0: past the largest double it is Infinity, written null.
      s[1] = (s[1] as number) + value;
      if (s[2] === null || value < s[2]) s[2] = value;
      if (s[3] === null || value > s[3]) s[3] = value;
    }
  }

  get size(): number {
    let size = 0;
    for (const slots of this.byThing.values()) size += slots.size;
    return size;
  }

  /** The slots counted, in (thing, slot) order: the order rows are locked in on PostgreSQL. */
  rows(): SlotRow[] {
    const rows: SlotRow[] = [];
    for (const [thingId, slots] of this.byThing) {
      for (const [slot, stats] of slots) rows.push({ thingId, slot, stats });
    }
    return rows.sort((a, b) => a.thingId - b.thingId || a.slot - b.slot);
  }
}

const eventRollups = new SlotRollupTable('event_rollups', 'thing_id', 'bigint');

/** Adds counted slots to the stored rollups (slot-rollup-table.ts: one statement on SQLite, three on PostgreSQL). */
export async function addToRollups(db: Executor, counted: readonly SlotRow[]): Promise<void> {
  await eventRollups.add(
    db,
    counted.map((r) => ({ key: r.thingId, slot: r.slot, stats: r.stats })),
  );
}

const rollupReads = new QueryCache();

/** A thing's stored slot rollups whose slot starts in [from, to), as [slot, stats], oldest first. */
export async function rollupsOf(
  db: Executor,
  thingId: number,
  from: number,
  to: number,
): Promise<[number, SlotStats][]> {
  const engine = engineOfDb(db);
  const [row] = (await rollupReads.execute(db, 'rollups', { thing: thingId, from, to }, (v) =>
    db
      .selectFrom(
        db
          .selectFrom('event_rollups')
          .select(['slot', 'stats'])
          .where('thing_id', '=', v.thing as number)
          .where('slot', '>=', v.from as number)
          .where('slot', '<', v.to as number)
          .orderBy('slot')
          .as('r'),
      )
      .select(jsonRowsText(engine, ['r.slot', 'r.stats'], ['r.slot']).as('rows')),
  )) as { rows: string | null }[];
  if (!row?.rows) return [];
  return JSON.parse(`[${row.rows}]`) as [number, SlotStats][];
}

/**
 * Counts the rollups of things (all of them by default) again from their stored events, with their
 * templates' metrics as they are now: for the events stored before rollups existed.
 */
export async function rebuildRollups(db: Executor, thingIds?: number[]): Promise<void> {
  let query = db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .select(['t.thing_id', 'tt.metrics']);
  if (thingIds) query = query.where('t.thing_id', 'in', thingIds.length > 0 ? thingIds : [-1]);
  for (const thing of await query.orderBy('t.thing_id').execute()) {
    const thingId = Number(thing.thing_id);
    await markThingSlots(db, [thingId]);
    await db.deleteFrom('event_rollups').where('thing_id', '=', thingId).execute();
    const counter = new SlotCounter();
    const metrics = metricPaths(thing.metrics);
    for await (const chunk of eventChunks(db, { thingId, from: undefined, to: undefined, byCreatedAt: false })) {
      for (const [at, , data] of chunk) counter.add(thingId, metrics, at, data);
    }
    const rows = counter.rows();
    for (let i = 0; i < rows.length; i += 1000) await addToRollups(db, rows.slice(i, i + 1000));
    await markThingSlots(db, [thingId]);
  }
}

/** Deletes at most `limit` of a thing's oldest rollup slots that start before `before`; answers how many. */
export async function deleteRollupsBefore(db: Executor, thingId: number, before: number, limit: number) {
  const oldest = await db
    .selectFrom('event_rollups')
    .select('slot')
    .where('thing_id', '=', thingId)
    .where('slot', '<', before)
    .orderBy('slot')
    .limit(limit)
    .execute();
  if (oldest.length === 0) return 0;
  const end = Number((oldest.at(-1) as { slot: number }).slot) + 1;
  await markThingSlots(db, [thingId], Number((oldest[0] as { slot: number }).slot), end);
  const result = await db
    .deleteFrom('event_rollups')
    .where('thing_id', '=', thingId)
    .where('slot', '<', end)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

const deleteSlots = new RowsStatement(
  ['bigint', 'bigint'],
  () => `delete from event_rollups where (thing_id, slot) in (select v.column1, v.column2 from v)`,
);

/**
 * After a thing's events in [from, to] (ms) were deleted in this transaction, its stored slots from the
 * one `from` falls in to the one `to` falls in are counted again from the events left in them, with the
 * template's metrics (`metricsText`): the slots wholly inside the range go, the two at its ends keep
 * the rest of their events. On PostgreSQL those slots' rows are locked first, in slot order as the
 * event writer locks them: events another transaction stored in them before are counted with the rest,
 * and one storing events in them now waits and adds its counts to the corrected ones. A slot with no
 * row had no event to delete and is left to whoever is writing it.
 */
export async function correctRollups(tx: Executor, thingId: number, from: number, to: number, metricsText: string) {
  const first = slotOf(from);
  const end = slotOf(to) + SLOT_MS;
  let stored = tx
    .selectFrom('event_rollups')
    .select('slot')
    .where('thing_id', '=', thingId)
    .where('slot', '>=', first)
    .where('slot', '<', end)
    .orderBy('slot');
  if (engineOfDb(tx) === 'postgres') stored = stored.forUpdate();
  const slots = (await stored.execute()).map((r) => Number(r.slot));
  await markThingSlots(tx, [thingId], first, end);
  await deleteSlots.run(tx, [slots.map(() => thingId), slots]);
  const counter = new SlotCounter();
  const metrics = metricPaths(metricsText);
  for await (const chunk of eventChunks(tx, { thingId, from: first, to: end - 1, byCreatedAt: false })) {
    for (const [at, , data] of chunk) counter.add(thingId, metrics, at, data);
  }
  const kept = new Set(slots);
  await addToRollups(
    tx,
    counter.rows().filter((r) => kept.has(r.slot)),
  );
}
