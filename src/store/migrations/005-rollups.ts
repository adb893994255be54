/**
 * Per-thing 15-minute rollups of event metrics (events/rollups.ts), counted for the events already
 * stored.
 *
 * A migration runs once per store, so what it does must not change with the code that runs later:
 * the counting below is the rebuild of events/rollups.ts as it was when this migration was written,
 * statements and all, copied here rather than called. Changes to rollups.ts do not change it.
 */
import { CompiledQuery, type Kysely } from 'kysely';

type Engine = 'sqlite' | 'postgres';

const engineOf = (db: Kysely<unknown>): Engine =>
  db.getExecutor().adapter.constructor.name.startsWith('Sqlite') ? 'sqlite' : 'postgres';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_rollups')
    .addColumn('thing_id', 'bigint', (c) => c.notNull())
    .addColumn('slot', 'bigint', (c) => c.notNull())
    .addColumn('stats', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_rollups_pk', ['thing_id', 'slot'])
    .execute();
  await countRollups(db);
}

/** count, sum, min, max of a metric's finite numeric values. */
type Stats = [count: number, sum: number, min: number | null, max: number | null];
/** By metric name; a null prototype, since names come from users. */
type SlotStats = Record<string, Stats>;
interface SlotRow {
  thingId: number;
  slot: number;
  stats: SlotStats;
}
type Event = [at: number, id: number, data: Record<string, unknown>];

const SLOT_MS = 15 * 60_000;
const CHUNK_EVENTS = 20_000;
const WRITE_ROWS = 1000;

/** The statements, as the query layer compiled them for each engine. */
const SQL: Record<
  Engine,
  Record<'things' | 'clear' | 'events' | 'eventsAfter' | 'insert' | 'read' | 'update', string>
> = {
  sqlite: {
    things:
      'select "t"."thing_id", "tt"."metrics" from "things" as "t" inner join "thing_templates" as "tt" on "tt"."thing_template_key" = "t"."thing_template_key" order by "t"."thing_id"',
    clear: 'delete from "event_rollups" where "thing_id" = ?',
    events:
      'select group_concat(\'[\' || "page"."timestamp" || \',\' || "page"."event_id" || \',\' || "page"."data" || \']\', \',\') as "rows" from (select "timestamp", "event_id", "data" from "events" where "thing_id" = ? order by "timestamp" asc, "event_id" asc limit 20000) as "page"',
    eventsAfter:
      'select group_concat(\'[\' || "page"."timestamp" || \',\' || "page"."event_id" || \',\' || "page"."data" || \']\', \',\') as "rows" from (select "timestamp", "event_id", "data" from "events" where "thing_id" = ? and ("timestamp" > ? or ("timestamp" = ? and "event_id" > ?)) order by "timestamp" asc, "event_id" asc limit 20000) as "page"',
    insert: `with v as (select value ->> 0 as column1, value ->> 1 as column2, value ->> 2 as column3 from json_each(?)) insert into event_rollups (thing_id, slot, stats)
    select v.column1, v.column2, v.column3 from v where true
    on conflict (thing_id, slot) do nothing
    returning thing_id, slot`,
    read: `with v as (select value ->> 0 as column1, value ->> 1 as column2 from json_each(?)) select r.thing_id, r.slot, r.stats from v cross join event_rollups r
      where r.thing_id = v.column1 and r.slot = v.column2 order by r.thing_id, r.slot `,
    update: `with v as (select value ->> 0 as column1, value ->> 1 as column2, value ->> 2 as column3 from json_each(?)) update event_rollups set stats = v.column3 from v
    where event_rollups.thing_id = v.column1 and event_rollups.slot = v.column2`,
  },
  postgres: {
    things:
      'select "t"."thing_id", "tt"."metrics" from "things" as "t" inner join "thing_templates" as "tt" on "tt"."thing_template_key" = "t"."thing_template_key" order by "t"."thing_id"',
    clear: 'delete from "event_rollups" where "thing_id" = $1',
    events:
      'select string_agg(\'[\' || "page"."timestamp" || \',\' || "page"."event_id" || \',\' || "page"."data" || \']\', \',\' order by "page"."timestamp", "page"."event_id") as "rows" from (select "timestamp", "event_id", "data" from "events" where "thing_id" = $1 order by "timestamp" asc, "event_id" asc limit 20000) as "page"',
    eventsAfter:
      'select string_agg(\'[\' || "page"."timestamp" || \',\' || "page"."event_id" || \',\' || "page"."data" || \']\', \',\' order by "page"."timestamp", "page"."event_id") as "rows" from (select "timestamp", "event_id", "data" from "events" where "thing_id" = $1 and ("timestamp" > $2 or ("timestamp" = $3 and "event_id" > $4)) order by "timestamp" asc, "event_id" asc limit 20000) as "page"',
    insert: `with v as (select * from unnest($1::bigint[], $2::bigint[], $3::text[]) as u(column1, column2, column3)) insert into event_rollups (thing_id, slot, stats)
    select v.column1, v.column2, v.column3 from v where true
    on conflict (thing_id, slot) do nothing
    returning thing_id, slot`,
    read: `with v as (select * from unnest($1::bigint[], $2::bigint[]) as u(column1, column2)) select r.thing_id, r.slot, r.stats from v cross join event_rollups r
      where r.thing_id = v.column1 and r.slot = v.column2 order by r.thing_id, r.slot for update of r`,
    update: `with v as (select * from unnest($1::bigint[], $2::bigint[], $3::text[]) as u(column1, column2, column3)) update event_rollups set stats = v.column3 from v
    where event_rollups.thing_id = v.column1 and event_rollups.slot = v.column2`,
  },
};

/** Counts every thing's rollups from its stored events, with its template's metrics. */
export async function countRollups(db: Kysely<unknown>): Promise<void> {
  const engine = engineOf(db);
  const sql = SQL[engine];
  const run = async <R>(text: string, parameters: unknown[] = []) =>
    (await db.executeQuery<R>(CompiledQuery.raw(text, parameters))).rows;
  for (const thing of await run<{ thing_id: number | string; metrics: string }>(sql.things)) {
    const thingId = Number(thing.thing_id);
    await run(sql.clear, [thingId]);
    const names = (JSON.parse(thing.metrics) as { name: string }[]).map((m) => m.name);
    const paths = names.map((name) => name.split('.'));
    const slots = new Map<number, SlotStats>();
    let after: Event | undefined;
    for (;;) {
      const [row] = await run<{ rows: string | null }>(
        after ? sql.eventsAfter : sql.events,
        after ? [thingId, after[0], after[0], after[1]] : [thingId],
      );
      if (!row?.rows) break;
      const events = JSON.parse(`[${row.rows}]`) as Event[];
      if (!events.every((e, i) => i === 0 || byTimeThenId(events[i - 1] as Event, e) <= 0)) events.sort(byTimeThenId);
      for (const [at, , data] of events) count(slots, names, paths, at, data);
      if (events.length < CHUNK_EVENTS) break;
      after = events[events.length - 1];
    }
    const rows = [...slots].map(([slot, stats]) => ({ thingId, slot, stats })).sort((a, b) => a.slot - b.slot);
    for (let i = 0; i < rows.length; i += WRITE_ROWS) await addRows(engine, run, rows.slice(i, i + WRITE_ROWS));
  }
}

const byTimeThenId = (a: Event, b: Event) => a[0] - b[0] || a[1] - b[1];

function count(
  slots: Map<number, SlotStats>,
  names: string[],
  paths: string[][],
  at: number,
  data: Record<string, unknown>,
): void {
  const slot = Math.floor(at / SLOT_MS) * SLOT_MS;
  let stats = slots.get(slot);
  if (!stats) {
    stats = Object.create(null) as SlotStats;
    for (const name of names) stats[name] = [0, 0, null, null];
    slots.set(slot, stats);
  }
  for (let i = 0; i < names.length; i++) {
    const value = readPath(data, paths[i] as string[]);
    if (typeof value !== 'number' || !Number.isFinite(value)) continue;
    const s = stats[names[i] as string] as Stats;
    s[0] += 1;
    s[1] += value;
    if (s[2] === null || value < s[2]) s[2] = value;
    if (s[3] === null || value > s[3]) s[3] = value;
  }
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

/** A dotted name's value in nested data; array members by index. */
function readPath(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    if (Array.isArray(value) && !ARRAY_INDEX.test(segment)) return undefined;
    if (!Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** Inserts new slots; slots already stored (none after the thing's were cleared) are merged into. */
async function addRows(
  engine: Engine,
  run: <R>(text: string, parameters?: unknown[]) => Promise<R[]>,
  counted: SlotRow[],
): Promise<void> {
  const sql = SQL[engine];
  const parameters = (columns: unknown[][]) =>
    engine === 'postgres'
      ? columns
      : [JSON.stringify(Array.from({ length: columns[0]?.length ?? 0 }, (_, i) => columns.map((c) => c[i] ?? null)))];
  const columns = (rows: SlotRow[]) => [
    rows.map((r) => r.thingId),
    rows.map((r) => r.slot),
    rows.map((r) => JSON.stringify(r.stats)),
  ];
  const inserted = await run<{ thing_id: number | string; slot: number | string }>(
    sql.insert,
    parameters(columns(counted)),
  );
  if (inserted.length === counted.length) return;
  const fresh = new Set(inserted.map((r) => `${Number(r.thing_id)}:${Number(r.slot)}`));
  const existing = counted.filter((r) => !fresh.has(`${r.thingId}:${r.slot}`));
  const stored = await run<{ thing_id: number | string; slot: number | string; stats: string }>(
    sql.read,
    parameters([existing.map((r) => r.thingId), existing.map((r) => r.slot)]),
  );
  const storedStats = new Map(stored.map((r) => [`${Number(r.thing_id)}:${Number(r.slot)}`, r.stats]));
  const merged = existing.map((r) => {
    const before = storedStats.get(`${r.thingId}:${r.slot}`);
    if (before === undefined) return r;
    const old = Object.assign(Object.create(null) as SlotStats, JSON.parse(before) as SlotStats);
    const stats = Object.create(null) as SlotStats;
    for (const name of Object.keys(old)) {
      if (!Object.hasOwn(r.stats, name)) continue;
      const [a, b] = [old[name] as Stats, r.stats[name] as Stats];
      stats[name] = [
        a[0] + b[0],
        a[1] + b[1],
        a[2] === null ? b[2] : b[2] === null ? a[2] : Math.min(a[2], b[2]),
        a[3] === null ? b[3] : b[3] === null ? a[3] : Math.max(a[3], b[3]),
      ];
    }
    return { ...r, stats };
  });
  await run(sql.update, parameters(columns(merged)));
}
