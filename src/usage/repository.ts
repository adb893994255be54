import { sql } from 'kysely';
import { QueryCache } from '../store/prepared.ts';
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

const storedEvents = new QueryCache();

/**
 * Adds stored events to their organisations' days: in every event writer transaction, so compiled once
 * per number of organisations.
 */
export async function addStoredEvents(
  db: Executor,
  counts: readonly { organisationKey: string; dayStart: number; events: number }[],
): Promise<void> {
  const values = {
    organisations: counts.map((c) => c.organisationKey),
    days: counts.map((c) => c.dayStart),
    events: counts.map((c) => c.events),
  };
  await storedEvents.execute(db, 'addStoredEvents', values, (v) =>
    db
      .insertInto('event_days')
      .values(
        (v.organisations as string[]).map((organisation_key, i) => ({
          organisation_key,
          day_start: (v.days as number[])[i] as number,
          events: (v.events as number[])[i] as number,
        })),
      )
      .onConflict((c) =>
        c
          .columns(['organisation_key', 'day_start'])
          .doUpdateSet({ events: sql<number>`event_days.events + excluded.events` }),
      ),
  );
}

/** An organisation's events stored on the days that started at or after `since`. */
export async function eventsSince(db: Executor, organisationKey: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('event_days')
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
