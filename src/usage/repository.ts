import { sql } from 'kysely';
import { RowsStatement } from '../store/dialect.ts';
import type { Executor } from '../store/store.ts';

/**
 * Adds `count` user API requests to an organisation's window and answers the window's total across
 * every instance, in one statement.
 */
export async function addRequests(db: Executor, organisationKey: string, windowStart: number, count: number) {
  const row = await db
    .insertInto('api_request_windows')
    .values({ organisation_key: organisationKey, window_start: windowStart, requests: count })
    .onConflict((c) =>
      c
        .columns(['organisation_key', 'window_start'])
        .doUpdateSet({ requests: sql<number>`api_request_windows.requests + excluded.requests` }),
    )
    .returning('requests')
    .executeTakeFirstOrThrow();
  return Number(row.requests);
}

/** Forgets the windows that started before `before`. */
export async function pruneWindows(db: Executor, before: number): Promise<void> {
  await db.deleteFrom('api_request_windows').where('window_start', '<', before).execute();
}

/** An organisation's user API requests in the windows that started at or after `since`. */
export async function requestsSince(db: Executor, organisationKey: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('api_request_windows')
    .select(sql<number>`coalesce(sum(requests), 0)`.as('requests'))
    .where('organisation_key', '=', organisationKey)
    .where('window_start', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.requests);
}

/**
 * Adds counts per (organisation, period start) to a count table: column1 organisation key, column2 the
 * period's start, column3 events.
 */
function countAdder(table: 'event_days' | 'event_minutes' | 'event_limit_days', start: 'day_start' | 'minute_start') {
  const statement = new RowsStatement(
    ['text', 'bigint', 'bigint'],
    () => `insert into ${table} (organisation_key, ${start}, events)
    select v.column1, v.column2, v.column3 from v where true
    on conflict (organisation_key, ${start}) do update set events = ${table}.events + excluded.events`,
  );
  return async (db: Executor, counts: readonly { organisationKey: string; start: number; events: number }[]) => {
    await statement.run(db, [
      counts.map((c) => c.organisationKey),
      counts.map((c) => c.start),
      counts.map((c) => c.events),
    ]);
  };
}

/** Adds stored events to their organisations' UTC days (in every event writer transaction). */
export const addStoredEvents = countAdder('event_days', 'day_start');

/** Adds stored events to their organisations' minutes (in every event writer transaction). */
export const addStoredEventMinutes = countAdder('event_minutes', 'minute_start');

/** Adds events refused past a limit to their organisations' UTC days. */
export const addLimitedEvents = countAdder('event_limit_days', 'day_start');

/** An organisation's events stored (or, from `table` event_limit_days, refused past a limit) on the days that started at or after `since`. */
export async function eventsSince(
  db: Executor,
  organisationKey: string,
  since: number,
  table: 'event_days' | 'event_limit_days' = 'event_days',
): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select(sql<number>`coalesce(sum(events), 0)`.as('events'))
    .where('organisation_key', '=', organisationKey)
    .where('day_start', '>=', since)
    .executeTakeFirstOrThrow();
  return Number(row.events);
}

/**
 * An organisation's things, and the bytes its stored events take by estimate: each event as long as
 * its thing's newest event's text, plus `eventOverhead` bytes (docs/api.md, "Rate limits and usage").
 */
export async function thingFigures(db: Executor, organisationKey: string, eventOverhead: number) {
  const row = await db
    .selectFrom('things')
    .select([
      sql<number>`count(*)`.as('things'),
      sql<number>`coalesce(sum(event_count * (coalesce(length(last_event), 0) + ${sql.lit(eventOverhead)})), 0)`.as(
        'event_bytes',
      ),
    ])
    .where('organisation_key', '=', organisationKey)
    .executeTakeFirstOrThrow();
  return { things: Number(row.things), eventBytes: Number(row.event_bytes) };
}

/** Forgets the minutes that started before `before`. */
export async function pruneEventMinutes(db: Executor, before: number): Promise<void> {
  await db.deleteFrom('event_minutes').where('minute_start', '<', before).execute();
}

/** An organisation's events stored in each minute that started at or after `since` (minutes without any left out). */
export async function eventMinutesSince(db: Executor, organisationKey: string, since: number) {
  const rows = await db
    .selectFrom('event_minutes')
    .select(['minute_start', 'events'])
    .where('organisation_key', '=', organisationKey)
    .where('minute_start', '>=', since)
    .execute();
  return rows.map((r) => ({ minuteStart: Number(r.minute_start), events: Number(r.events) }));
}
