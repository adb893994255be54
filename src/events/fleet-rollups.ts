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
import { SLOT_MS } from './rollups.ts';
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

/**
 * Rollups one statement reads at most (things times slots): about a tenth of a second of SQLite's time
 * on a server of two cores. On SQLite a statement holds the process's one thread, and on PostgreSQL it
 * runs under DATABASE_STATEMENT_TIMEOUT_MS: a month of 15-minute slots over 1,000 things (2.88 million
 * rollups) in one statement held ingestion for 9 s on SQLite, and passed the bound on PostgreSQL.
 */
export const ROLLUPS_PER_STATEMENT = 50_000;

/**
 * The rollups of these things whose slot starts in [from, to), added up per slot, oldest first. Read in
 * statements of at most `rollupsPerStatement` rollups (ROLLUPS_PER_STATEMENT), by things and by slots,
 * each after the event loop's other work of the time: a long range over many things takes longer, but
 * never holds the server (docs/storage.md, "Template rollups").
 */
export async function fleetRollups(
  db: Executor,
  thingIds: readonly number[],
  metrics: readonly string[],
  from: number,
  to: number,
  rollupsPerStatement = ROLLUPS_PER_STATEMENT,
): Promise<FleetSlot[]> {
  if (thingIds.length === 0 || to <= from) return [];
  const slots = Math.ceil((to - from) / SLOT_MS);
  const thingsAtOnce = Math.max(1, Math.min(thingIds.length, Math.floor(rollupsPerStatement / slots)));
  const slotsAtOnce = Math.max(1, Math.floor(rollupsPerStatement / thingsAtOnce));
  const bySlot = new Map<number, FleetSlot>();
  let first = true;
  for (let start = from; start < to; start += slotsAtOnce * SLOT_MS) {
    const end = Math.min(to, start + slotsAtOnce * SLOT_MS);
    for (let t = 0; t < thingIds.length; t += thingsAtOnce) {
      if (!first) await new Promise((resolve) => setImmediate(resolve));
      first = false;
      const rows = await allMetricsSummed(db, thingIds.slice(t, t + thingsAtOnce), metrics, start, end);
      for (const row of rows) {
        const known = bySlot.get(row.slot);
        if (known) addFleetSlot(known, row);
        else bySlot.set(row.slot, row);
      }
    }
  }
  return [...bySlot.values()].sort((a, b) => a.slot - b.slot);
}

/** One slot's sums over some things added to its sums over others. */
function addFleetSlot(into: FleetSlot, more: FleetSlot): void {
  into.stats = into.stats.map((stats, m) => {
    const [count, sum, min, max] = stats;
    const [count2, sum2, min2, max2] = more.stats[m] as MetricStats;
    const least = min === null ? min2 : min2 === null ? min : Math.min(min, min2);
    const most = max === null ? max2 : max2 === null ? max : Math.max(max, max2);
    // A sum past the largest double is null, as a slot's is (events/slot-stats.ts); adding one is too.
    return [count + count2, sum === null || sum2 === null ? null : sum + sum2, least, most];
  });
  into.uncovered.push(...more.uncovered);
}

/** The rollups of these things in [from, to) added up per slot, every metric, in statements of METRICS_PER_STATEMENT. */
async function allMetricsSummed(
  db: Executor,
  thingIds: readonly number[],
  metrics: readonly string[],
  from: number,
  to: number,
): Promise<FleetSlot[]> {
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
