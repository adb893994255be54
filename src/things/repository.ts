import { sql } from 'kysely';
import type { ListQuery } from '../core/list-query.ts';
import { markThingSlots } from '../events/template-rollups.ts';
import { engineOfDb, lockRows, RowsStatement } from '../store/dialect.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage, type PagingColumns } from '../store/paging.ts';
import { compiledQuery, type QueryValues } from '../store/prepared.ts';
import type { Executor, Tx } from '../store/store.ts';
import type { ThingRow } from '../store/tables.ts';

/**
 * What a thing is written with: the store numbers it, and the event writer keeps its event count and
 * arrival lags.
 */
export type ThingColumns = Omit<ThingRow, 'thing_id' | 'event_count' | 'arrival_lag_min' | 'arrival_lag_max'>;

/** A thing with what its presentation needs of its template. */
export type ThingWithTemplate = ThingColumns & {
  thing_id: number;
  event_count: number;
  thing_template_name: string;
  heartbeat_interval: number;
  /** Days its events are kept: its template's retention_days, else its organisation's; null: for ever. */
  retention_days: number | null;
};

export const THING_PAGING: PagingColumns = {
  sort: { created_at: 't.created_at', updated_at: 't.updated_at', name: 't.name', thing_key: 't.thing_key' },
  key: 't.thing_key',
  search: ['t.thing_key', 't.name', 't.description'],
  tags: 't.tags',
};

/** Things joined with their template (and its retention, or their organisation's); repositories narrow it further. */
export function selectThings(db: Executor) {
  return db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .innerJoin('organisations as o', 'o.organisation_key', 't.organisation_key')
    .selectAll('t')
    .select(['tt.name as thing_template_name', 'tt.heartbeat_interval'])
    .select((eb) => eb.fn.coalesce('tt.retention_days', 'o.retention_days').as('retention_days'));
}

export interface ThingFilter {
  organisationKeys: string[];
  thingTemplateKey?: string | undefined;
  biDirectional?: boolean | undefined;
  /** Only these things (members of a static group). */
  staticGroupKey?: string | undefined;
  /** Only things alive (true) or not (false) at `now` (presenter.ts, isAlive). */
  alive?: boolean | undefined;
  /** When `alive` is judged (ms); now when not given. */
  now?: number | undefined;
}

/** A thing filter as query values (see store/prepared.ts): present filters become parameters. */
export function thingFilterValues(filter: ThingFilter): QueryValues {
  return {
    organisations: filter.organisationKeys,
    template: filter.thingTemplateKey,
    biDirectional: filter.biDirectional === undefined ? undefined : filter.biDirectional ? 1 : 0,
    staticGroup: filter.staticGroupKey,
    alive: filter.alive === undefined ? undefined : filter.alive ? 1 : 0,
    now: filter.alive === undefined ? undefined : (filter.now ?? Date.now()),
  };
}

/** Whether a thing (`t`, its template `tt`) was heard from within twice its heartbeat interval of `now` (ms): presenter.ts, isAlive. */
function aliveAt(now: unknown) {
  const heard = (column: 't.last_event_at' | 't.last_beat_at') =>
    sql`(${sql.ref(column)} > 0 and ${sql.ref(column)} >= cast(${now} as bigint) - 2000 * tt.heartbeat_interval)`;
  return sql`(${heard('t.last_event_at')} or ${heard('t.last_beat_at')})`;
}

export function filteredThings(db: Executor, values: QueryValues) {
  let query = selectThings(db).where(inOrganisations(values.organisations as string[], 't.organisation_key'));
  if (values.template !== undefined) query = query.where('t.thing_template_key', '=', values.template as string);
  if (values.biDirectional !== undefined) query = query.where('t.bi_directional', '=', values.biDirectional as number);
  if (values.alive !== undefined) {
    query = query.where(sql<boolean>`(case when ${aliveAt(values.now)} then 1 else 0 end) = ${values.alive}`);
  }
  if (values.staticGroup !== undefined) {
    const groupKey = values.staticGroup as string;
    query = query.where('t.thing_key', 'in', (eb) =>
      eb.selectFrom('group_things').select('thing_key').where('group_key', '=', groupKey),
    );
  }
  return query;
}

export function listThings(db: Executor, filter: ThingFilter, list: ListQuery) {
  return fetchPage<ThingWithTemplate>(
    db,
    { name: 'things', values: thingFilterValues(filter), build: filteredThings, columns: THING_PAGING },
    list,
  );
}

export async function findThing(
  db: Executor,
  organisationKeys: string[],
  thingKey: string,
): Promise<ThingWithTemplate | undefined> {
  return (await selectThings(db)
    .where('t.thing_key', '=', thingKey)
    .where(inOrganisations(organisationKeys, 't.organisation_key'))
    .executeTakeFirst()) as ThingWithTemplate | undefined;
}

/** Those of these things of one organisation that exist, with their templates. */
export async function findThingsOfOrganisation(
  db: Executor,
  organisationKey: string,
  thingKeys: readonly string[],
): Promise<ThingWithTemplate[]> {
  return (await selectThings(db)
    .where('t.organisation_key', '=', organisationKey)
    .where('t.thing_key', 'in', thingKeys)
    .execute()) as ThingWithTemplate[];
}

/**
 * The keys of these that name things of the organisations. With `hold`, on PostgreSQL the things are
 * held until the transaction ends (FOR KEY SHARE, which conflicts with deleteThing's lock), so that
 * what refers to them (a static group's members) cannot be written for a thing deleted meanwhile;
 * SQLite has one writer at a time and needs no lock.
 */
export async function existingThingKeys(
  db: Executor,
  organisationKeys: string[],
  keys: string[],
  hold = false,
): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const query = db
    .selectFrom('things')
    .select('thing_key')
    .where('thing_key', 'in', keys)
    .where(inOrganisations(organisationKeys));
  const rows = await (hold ? query.$call(lockRows(engineOfDb(db), { mode: 'key share' })) : query).execute();
  return new Set(rows.map((r) => r.thing_key));
}

/** Things written by one statement: 15 values each, well within both engines' parameter limits. */
const THINGS_PER_STATEMENT = 500;

export async function insertThings(db: Executor, rows: readonly ThingColumns[]): Promise<void> {
  for (let start = 0; start < rows.length; start += THINGS_PER_STATEMENT) {
    await db
      .insertInto('things')
      .values(rows.slice(start, start + THINGS_PER_STATEMENT))
      .execute();
  }
}

/**
 * The things these keys name, in whichever organisation (keys are unique across organisations), read a
 * few hundred keys per statement.
 */
export async function thingsWithKeys(db: Executor, keys: readonly string[]): Promise<ThingWithTemplate[]> {
  const found: ThingWithTemplate[] = [];
  for (let start = 0; start < keys.length; start += THINGS_PER_STATEMENT) {
    const rows = await selectThings(db)
      .where('t.thing_key', 'in', keys.slice(start, start + THINGS_PER_STATEMENT))
      .execute();
    found.push(...(rows as ThingWithTemplate[]));
  }
  return found;
}

export async function updateThing(db: Executor, thingKey: string, changes: Partial<ThingColumns>) {
  // A thing moved to another template leaves the rollups of both (events/template-rollups.ts).
  const moved = changes.thing_template_key === undefined ? [] : await thingIdsOf(db, thingKey);
  await markThingSlots(db, moved);
  await db.updateTable('things').set(changes).where('thing_key', '=', thingKey).execute();
  await markThingSlots(db, moved);
}

const thingIdsOf = async (db: Executor, thingKey: string) =>
  (await db.selectFrom('things').select('thing_id').where('thing_key', '=', thingKey).execute()).map((r) =>
    Number(r.thing_id),
  );

/**
 * Removes a thing and what hangs on it (its events, static group memberships). Answers whether it was
 * a member of a static group.
 */
export async function deleteThing(db: Executor, thingKey: string): Promise<boolean> {
  // Locked first: a transaction making the thing a group member (existingThingKeys with `hold`) either
  // commits before, and its membership is deleted below, or waits and then finds the thing gone.
  // (A statement for the lock alone: SQLite, one writer at a time, needs none.)
  if (engineOfDb(db) === 'postgres') {
    await db.selectFrom('things').select('thing_id').where('thing_key', '=', thingKey).forUpdate().execute();
  }
  // Its template's rollups count it no more once its own are gone (events/template-rollups.ts).
  await markThingSlots(db, await thingIdsOf(db, thingKey));
  for (const table of ['events', 'event_blocks', 'event_rollups'] as const) {
    await db
      .deleteFrom(table)
      .where('thing_id', 'in', (eb) => eb.selectFrom('things').select('thing_id').where('thing_key', '=', thingKey))
      .execute();
  }
  const memberships = await db.deleteFrom('group_things').where('thing_key', '=', thingKey).executeTakeFirst();
  await db.deleteFrom('things').where('thing_key', '=', thingKey).execute();
  return Number(memberships.numDeletedRows) > 0;
}

/* What stored events do to their things (events/writer.ts, through the things service). */

/** What one transaction's events do to their thing. */
export interface ThingTouch {
  /** Its newest event by its own time. */
  newest: { timestamp: number; data: Record<string, unknown> };
  /** How many events it got. */
  count: number;
  /** The last waypoint sent, in arrival order. */
  waypoint: [number, number] | undefined;
  /** The smallest and largest receipt time minus event time of its events (ms). */
  lagMin: number;
  lagMax: number;
}

/**
 * Every touched thing's newest event (by its own time), heard-from time, event count and arrival lag
 * bounds, in one statement: one UPDATE per thing would cost a round trip each on PostgreSQL. A late
 * event does not replace a newer last_event; the last waypoint of the batch becomes the coordinates.
 */
export function updateLastEvents(tx: Tx, touched: Map<number, ThingTouch>, now: number) {
  // In thing order, so concurrent transactions (several instances) lock things in the same order.
  const ids = [...touched.keys()].sort((a, b) => a - b);
  const touches = ids.map((id) => touched.get(id) as ThingTouch);
  return lastEvents.run(
    tx,
    [
      ids,
      touches.map((t) => t.newest.timestamp),
      touches.map((t) => JSON.stringify({ timestamp: t.newest.timestamp, data: t.newest.data })),
      touches.map((t) => (t.waypoint ? JSON.stringify(t.waypoint) : null)),
      touches.map((t) => t.count),
      touches.map((t) => t.lagMin),
      touches.map((t) => t.lagMax),
    ],
    [now],
  );
}

const NEWER = 'things.last_event_timestamp is null or things.last_event_timestamp <= v.column2';
const lastEvents = new RowsStatement(
  ['bigint', 'bigint', 'text', 'text', 'bigint', 'bigint', 'bigint'],
  (extra) => `update things set
      last_event_at = cast(${extra(0)} as bigint),
      event_count = things.event_count + v.column5,
      last_event = case when ${NEWER} then v.column3 else things.last_event end,
      last_event_timestamp = case when ${NEWER} then v.column2 else things.last_event_timestamp end,
      coordinates = coalesce(v.column4, things.coordinates),
      arrival_lag_min = case when things.arrival_lag_min is null or v.column6 < things.arrival_lag_min
        then v.column6 else things.arrival_lag_min end,
      arrival_lag_max = case when things.arrival_lag_max is null or v.column7 > things.arrival_lag_max
        then v.column7 else things.arrival_lag_max end
    from v
    where things.thing_id = v.column1`,
);

/** Events of a thing deleted (retention, a range delete): its count goes down by as many. */
export const uncountEvents = compiledQuery((db: Executor, thingId: number, count: number) =>
  db
    .updateTable('things')
    .set((eb) => ({ event_count: eb('event_count', '-', count) }))
    .where('thing_id', '=', thingId),
);

/** Lowers each thing's event count by its number of events deleted (column1: thing id, column2: count). */
export const uncountEventsOfThings = new RowsStatement(
  ['bigint', 'bigint'],
  () => 'update things set event_count = event_count - v.column2 from v where things.thing_id = v.column1',
);

/** A thing's newest event (by its own time) as it is now, after events were deleted; null for none left. */
export async function setLastEvent(tx: Tx, thingId: number, newest: { timestamp: number; data: string } | null) {
  await tx
    .updateTable('things')
    .set({
      last_event: newest === null ? null : `{"timestamp":${newest.timestamp},"data":${newest.data}}`,
      last_event_timestamp: newest?.timestamp ?? null,
    })
    .where('thing_id', '=', thingId)
    .execute();
}

/** Whether a thing's newest event is older than `before` (ms): retention has deleted it. */
export async function lastEventBefore(db: Executor, thingId: number, before: number): Promise<boolean> {
  const row = await db
    .selectFrom('things')
    .select('thing_id')
    .where('thing_id', '=', thingId)
    .where('last_event_timestamp', '<', before)
    .executeTakeFirst();
  return row !== undefined;
}

/** A heartbeat: when the thing was last heard from without an event. */
export const heartbeat = compiledQuery((db: Executor, thingId: number, at: number) =>
  db.updateTable('things').set({ last_beat_at: at }).where('thing_id', '=', thingId),
);

/** Every thing of an organisation with its template's fields (realtime push watches whether each is alive). */
export async function thingsOfOrganisation(db: Executor, organisationKey: string): Promise<ThingWithTemplate[]> {
  return (await selectThings(db).where('t.organisation_key', '=', organisationKey).execute()) as ThingWithTemplate[];
}

/** The keys of the things of a template. */
export async function thingKeysOfTemplate(db: Executor, organisationKeys: string[], templateKey: string) {
  const rows = await db
    .selectFrom('things')
    .select('thing_key')
    .where('thing_template_key', '=', templateKey)
    .where(inOrganisations(organisationKeys))
    .execute();
  return rows.map((r) => r.thing_key);
}

/** How many things each of these templates has, in every organisation. */
export async function thingCountsOfTemplates(db: Executor, templateKeys: string[]): Promise<Map<string, number>> {
  if (templateKeys.length === 0) return new Map();
  const rows = await db
    .selectFrom('things')
    .select(['thing_template_key', (eb) => eb.fn.countAll().as('things')])
    .where('thing_template_key', 'in', templateKeys)
    .groupBy('thing_template_key')
    .execute();
  return new Map(rows.map((r) => [r.thing_template_key, Number(r.things)]));
}

/**
 * An organisation's things, and how many of them are alive at `now` (as `isAlive` decides: heard from
 * within twice its template's heartbeat interval), counted by the store in one pass.
 */
export async function countAlive(db: Executor, organisationKey: string, now: number) {
  const row = await db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .select([
      sql<number>`count(*)`.as('things'),
      sql<number>`coalesce(sum(case when ${aliveAt(now)} then 1 else 0 end), 0)`.as('alive'),
    ])
    .where('t.organisation_key', '=', organisationKey)
    .executeTakeFirstOrThrow();
  return { things: Number(row.things), alive: Number(row.alive) };
}
