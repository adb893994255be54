/**
 * Template rollups (docs/storage.md, "Template rollups"): per thing template and 15-minute slot, the
 * slot rollups of all the template's things merged into one row, so that a fleet's 30 days in
 * 15-minute buckets read one row per slot (queries/fleet.ts) instead of one per thing and slot.
 *
 * The event writer merges what it counts into them in the same transaction as the things' own rollups,
 * with the same merge (slot-stats.ts), so a template's row is the merge of its things' rows: counts and
 * sums added, the least minimum and greatest maximum, and only the metrics every one of them covers.
 * What cannot be merged in (events of a range deleted, expired rollups swept, a thing deleted or moved
 * to another template, rollups counted again) lists the template slots it touches for repair, in its
 * own transaction: a listed slot is read thing by thing until the sweeper counts its row again from
 * the things' rows (`repairTemplateRollups`).
 */
import { sql } from 'kysely';
import { engineOfDb, inNumberList, jsonRowsText, RowsStatement } from '../store/dialect.ts';
import type { Executor } from '../store/store.ts';
import { SlotRollupTable } from './slot-rollup-table.ts';
import { type MetricStats, mergeSlotStats, parseSlotStats, type SlotStats } from './slot-stats.ts';

interface TemplateSlot {
  templateKey: string;
  slot: number;
  stats: SlotStats;
}

/** Counted slots of things merged per template (each thing's template as the writer checked it), in (template, slot) order. */
export function templateSlotsOf(
  counted: readonly { thingId: number; slot: number; stats: SlotStats }[],
  templateOf: (thingId: number) => string,
): TemplateSlot[] {
  const merged = new Map<string, TemplateSlot>();
  for (const row of counted) {
    const templateKey = templateOf(row.thingId);
    const id = `${row.slot}:${templateKey}`;
    const known = merged.get(id);
    if (known) known.stats = mergeSlotStats(known.stats, row.stats);
    else merged.set(id, { templateKey, slot: row.slot, stats: row.stats });
  }
  return [...merged.values()].sort((a, b) =>
    a.templateKey < b.templateKey ? -1 : a.templateKey > b.templateKey ? 1 : a.slot - b.slot,
  );
}

const templateRollupTable = new SlotRollupTable('template_rollups', 'thing_template_key', 'text');

/**
 * Merges counted slots into the stored template rollups as the things' own are (slot-rollup-table.ts):
 * instances storing events of one template at once add up instead of overwriting.
 */
export async function addToTemplateRollups(db: Executor, counted: readonly TemplateSlot[]): Promise<void> {
  await templateRollupTable.add(
    db,
    counted.map((r) => ({ key: r.templateKey, slot: r.slot, stats: r.stats })),
  );
}

/**
 * Lists for repair the slots of a thing's stored rollups whose slot starts in [from, to) (every one by
 * default), under the template the thing has in this transaction: to be called where its rollups
 * change other than by the writer's merge, before they are deleted, and after a change of template.
 */
export async function markThingSlots(db: Executor, thingIds: readonly number[], from = -8.64e15, to = 8.64e15) {
  if (thingIds.length === 0) return;
  const engine = engineOfDb(db);
  await sql`insert into template_rollup_repairs (thing_template_key, slot)
    select distinct t.thing_template_key, r.slot from event_rollups r join things t on t.thing_id = r.thing_id
    where ${inNumberList(engine, 'r.thing_id', thingIds)} and r.slot >= ${from} and r.slot < ${to}
    on conflict (thing_template_key, slot) do nothing`.execute(db);
}

/**
 * Counts again, from the rollups of the things the template has now, slots listed for repair (those
 * of one template at a time): as many as read about `rows` rollups, one at least; answers how many.
 * On PostgreSQL the template rows are locked first, so that a writer merging into one either commits
 * before (and its things' rows are read here) or waits and merges into the row counted here.
 */
export async function repairTemplateRollups(tx: Executor, rows: number): Promise<number> {
  const [first] = await tx
    .selectFrom('template_rollup_repairs')
    .select('thing_template_key')
    .orderBy('thing_template_key')
    .limit(1)
    .execute();
  if (!first) return 0;
  const templateKey = first.thing_template_key;
  const [things] = await tx
    .selectFrom('things')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('thing_template_key', '=', templateKey)
    .execute();
  // A slot reads a row of each thing at most.
  const limit = Math.max(1, Math.floor(rows / Math.max(1, Number(things?.count ?? 0))));
  const slots = (
    await tx
      .selectFrom('template_rollup_repairs')
      .select('slot')
      .where('thing_template_key', '=', templateKey)
      .orderBy('slot')
      .limit(limit)
      .execute()
  ).map((r) => Number(r.slot));
  const engine = engineOfDb(tx);
  if (engine === 'postgres') {
    await templateRollupTable.insertNew.run(tx, [slots.map(() => templateKey), slots, slots.map(() => '{}')]);
    await templateRollupTable.readLocked.run(tx, [slots.map(() => templateKey), slots]);
  }
  await tx
    .deleteFrom('template_rollup_repairs')
    .where('thing_template_key', '=', templateKey)
    .where(inNumberList(engine, 'slot', slots))
    .execute();
  const stored = await sql<{ slot: number | string; stats: string }>`
    select r.slot, r.stats from event_rollups r
    where r.thing_id in (select t.thing_id from things t where t.thing_template_key = ${templateKey})
      and ${inNumberList(engine, 'r.slot', slots)}`.execute(tx);
  const merged = new Map<number, SlotStats>();
  for (const row of stored.rows) {
    const slot = Number(row.slot);
    const stats = parseSlotStats(row.stats);
    const known = merged.get(slot);
    merged.set(slot, known ? mergeSlotStats(known, stats) : stats);
  }
  const counted = slots.filter((s) => merged.has(s));
  const empty = slots.filter((s) => !merged.has(s));
  if (empty.length > 0) {
    await tx
      .deleteFrom('template_rollups')
      .where('thing_template_key', '=', templateKey)
      .where(inNumberList(engine, 'slot', empty))
      .execute();
  }
  const columns = [counted.map(() => templateKey), counted, counted.map((s) => JSON.stringify(merged.get(s)))];
  if (counted.length > 0) {
    // Every row exists on PostgreSQL (inserted above); on SQLite a missing one is inserted.
    if (engine === 'sqlite') await replace.run(tx, columns);
    else await templateRollupTable.update.run(tx, columns);
  }
  return slots.length;
}

const replace = new RowsStatement(
  ['text', 'bigint', 'text'],
  () => `insert into template_rollups (thing_template_key, slot, stats)
    select v.column1, v.column2, v.column3 from v where true
    on conflict (thing_template_key, slot) do update set stats = excluded.stats`,
);

export interface TemplateSlotStats {
  slot: number;
  /** Per metric asked for, in order. */
  stats: MetricStats[];
}

/**
 * A template's rollups whose slot starts in [from, to): `counted`, the slots whose row counts every
 * metric asked for and is not listed for repair, the rows' stats of those metrics; `uncounted`, the
 * slots whose row misses one or is listed, to be read thing by thing. A slot with neither a row nor a
 * listing has no event of the template's things.
 */
export async function templateRollups(
  db: Executor,
  templateKey: string,
  metrics: readonly string[],
  from: number,
  to: number,
): Promise<{ counted: TemplateSlotStats[]; uncounted: number[] }> {
  // One text for all the rows: a month's 2,880 rows cost the drivers far less so than as rows.
  const engine = engineOfDb(db);
  const [text] = await db
    .selectFrom(
      db
        .selectFrom('template_rollups')
        .select(['slot', 'stats'])
        .where('thing_template_key', '=', templateKey)
        .where('slot', '>=', from)
        .where('slot', '<', to)
        .as('r'),
    )
    .select(jsonRowsText(engine, ['r.slot', 'r.stats'], ['r.slot']).as('rows'))
    .execute();
  const rows = text?.rows ? (JSON.parse(`[${text.rows}]`) as [number, SlotStats][]) : [];
  const listed = await db
    .selectFrom('template_rollup_repairs')
    .select('slot')
    .where('thing_template_key', '=', templateKey)
    .where('slot', '>=', from)
    .where('slot', '<', to)
    .execute();
  const uncounted = new Set(listed.map((r) => Number(r.slot)));
  const counted: TemplateSlotStats[] = [];
  for (const [slot, stats] of rows) {
    if (uncounted.has(slot)) continue;
    // Own members only: metric names come from users (`__proto__`, `constructor`).
    const asked = metrics.map((m) => (Object.hasOwn(stats, m) ? stats[m] : undefined));
    if (asked.every((s) => s !== undefined)) counted.push({ slot, stats: asked as MetricStats[] });
    else uncounted.add(slot);
  }
  return { counted, uncounted: [...uncounted].sort((a, b) => a - b) };
}
