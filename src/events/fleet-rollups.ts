/**
 * The slot rollups of many things added up per slot in one statement (queries/fleet.ts): the store sums
 * the counts and sums and takes the least minimum and greatest maximum of each metric across the
 * things, and answers one row per slot instead of one per thing and slot. A thing's slot whose stats
 * do not name every metric asked for (events/rollups.ts: then they do not cover its events) is left out
 * of the sums and named, so that the caller counts that thing's events of the slot instead.
 */
import { sql } from 'kysely';
import {
  engineOfDb,
  inNumberList,
  isOutOfRange,
  jsonArrayNumber,
  jsonHasMember,
  jsonOf,
  keptApart,
} from '../store/dialect.ts';
import type { Executor } from '../store/store.ts';
import type { MetricStats } from './slot-stats.ts';

export interface FleetSlot {
  slot: number;
  /** Per metric asked for, in order: its stats over the things whose slot covered every metric. */
  stats: MetricStats[];
  /** Things whose stats of this slot miss a metric asked for: their events of the slot are not counted here. */
  uncovered: number[];
}

/** Metrics summed by one statement: five result columns each, well within SQLite's 2,000. */
const METRICS_PER_STATEMENT = 100;

/** The rollups of these things whose slot starts in [from, to), added up per slot, oldest first. */
export async function fleetRollups(
  db: Executor,
  thingIds: readonly number[],
  metrics: readonly string[],
  from: number,
  to: number,
): Promise<FleetSlot[]> {
  if (thingIds.length === 0) return [];
  const bySlot = new Map<number, FleetSlot>();
  for (let first = 0; first === 0 || first < metrics.length; first += METRICS_PER_STATEMENT) {
    const summed = metrics.slice(first, first + METRICS_PER_STATEMENT);
    // Sums of doubles past the largest fail on PostgreSQL: summed again exactly, as they rarely are.
    const rows = await sumSlots(db, thingIds, metrics, summed, from, to).catch((error: unknown) => {
      if (!isOutOfRange(error)) throw error;
      return sumSlots(db, thingIds, metrics, summed, from, to, true);
    });
    for (const row of rows) {
      const known = bySlot.get(row.slot);
      if (known) known.stats.push(...row.stats);
      else bySlot.set(row.slot, row);
    }
  }
  return [...bySlot.values()];
}

/**
 * One statement: `summed` of the metrics added up per slot over the rows that have every one of
 * `metrics`. Whether a row has them is worked out once per row, in the subquery kept apart. A slot's
 * sum past the largest double (stored null, events/slot-stats.ts) makes the metric's sum null; `exact`
 * sums PostgreSQL's as numerics.
 */
async function sumSlots(
  db: Executor,
  thingIds: readonly number[],
  metrics: readonly string[],
  summed: readonly string[],
  from: number,
  to: number,
  exact = false,
): Promise<FleetSlot[]> {
  const engine = engineOfDb(db);
  const covered =
    metrics.length === 0
      ? sql<boolean>`1 = 1`
      : sql.join(
          metrics.map((m) => jsonHasMember(engine, 's.j', m)),
          sql` and `,
        );
  const counted = (value: ReturnType<typeof jsonArrayNumber>) => sql`case when r.covered then ${value} end`;
  const columns = summed.flatMap((m, i) => [
    sql`sum(${counted(jsonArrayNumber(engine, 'r.j', m, 0))}) as ${sql.ref(`c${i}`)}`,
    sql`sum(${counted(jsonArrayNumber(engine, 'r.j', m, 1, exact))}) as ${sql.ref(`s${i}`)}`,
    sql`count(${counted(jsonArrayNumber(engine, 'r.j', m, 0))}) - count(${counted(jsonArrayNumber(engine, 'r.j', m, 1))}) as ${sql.ref(`o${i}`)}`,
    sql`min(${counted(jsonArrayNumber(engine, 'r.j', m, 2))}) as ${sql.ref(`n${i}`)}`,
    sql`max(${counted(jsonArrayNumber(engine, 'r.j', m, 3))}) as ${sql.ref(`x${i}`)}`,
  ]);
  const uncoveredIds =
    engine === 'sqlite'
      ? sql`group_concat(case when not r.covered then r.thing_id end)`
      : sql`string_agg(case when not r.covered then cast(r.thing_id as text) end, ',')`;
  const result = await sql<Record<string, number | string | null>>`
    select r.slot, ${uncoveredIds} as uncovered${sql.join([sql``, ...columns], sql`, `)}
    from (
      select s.thing_id, s.slot, s.j, (${covered}) as covered
      from (
        select thing_id, slot, ${jsonOf(engine, 'stats')} as j from event_rollups
        where ${inNumberList(engine, 'thing_id', thingIds)} and slot >= ${from} and slot < ${to}
        ${keptApart(engine)}
      ) as s
      ${keptApart(engine)}
    ) as r
    group by r.slot
    order by r.slot`.execute(db);
  const number = (value: number | string | null | undefined) =>
    value === null || value === undefined ? null : Number(value);
  return result.rows.map((row) => ({
    slot: Number(row.slot),
    stats: summed.map(
      (_, i): MetricStats => [
        number(row[`c${i}`]) ?? 0,
        // A numeric past the largest double reads as Infinity, answered null as an overflowed slot is.
        Number(row[`o${i}`] ?? 0) > 0 ? null : (number(row[`s${i}`]) ?? 0),
        number(row[`n${i}`]),
        number(row[`x${i}`]),
      ],
    ),
    uncovered:
      row.uncovered === null || row.uncovered === undefined ? [] : String(row.uncovered).split(',').map(Number),
  }));
}
