import { hasExpired } from '../core/retention.ts';
import { storedTags } from '../core/tags.ts';
import { formatOptional, type TimeFormatter } from '../core/time.ts';
import type { ThingWithTemplate } from './repository.ts';

/** Alive while a heartbeat or an event came within twice the template's heartbeat interval. */
export function isAlive(
  row: Pick<ThingWithTemplate, 'last_event_at' | 'last_beat_at' | 'heartbeat_interval'>,
  now: number,
) {
  const lastHeard = Math.max(row.last_event_at ?? 0, row.last_beat_at ?? 0);
  return lastHeard > 0 && now - lastHeard <= 2 * row.heartbeat_interval * 1000;
}

/** The Thing object (docs/api.md, "Things"). */
export function presentThing(row: ThingWithTemplate, time: TimeFormatter, now = Date.now()) {
  const tags = storedTags(row);
  // An expired newest event is not shown, as no query answers it, whether or not the sweeper has
  // deleted it yet (docs/storage.md, "Retention").
  const lastEvent =
    row.last_event && !hasExpired(Number(row.last_event_timestamp), row.retention_days, now)
      ? (JSON.parse(row.last_event) as { timestamp: number; data: unknown })
      : null;
  return {
    bi_directional: row.bi_directional === 1,
    coordinates: row.coordinates ? (JSON.parse(row.coordinates) as (number | string)[]) : null,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
    description: row.description,
    name: row.name,
    state: null,
    tags_array: tags,
    tags: tags.join(','),
    thing_key: row.thing_key,
    user_defined_properties: JSON.parse(row.user_defined_properties) as Record<string, string>,
    alive: isAlive(row, now),
    last_event: lastEvent ? { timestamp: time(lastEvent.timestamp), data: lastEvent.data } : null,
    last_beat: formatOptional(time, row.last_beat_at),
    thing_template_name: row.thing_template_name,
    thing_template_key: row.thing_template_key,
  };
}

/**
 * What a group expression sees of a thing (docs/expressions.md, "Names"): its fields with `tags` as an
 * array. Built straight from the row, because membership is evaluated over every thing of an
 * organisation.
 */
export function expressionViewOfThing(row: ThingWithTemplate, now: number) {
  return {
    name: row.name,
    description: row.description,
    thing_key: row.thing_key,
    tags: storedTags(row),
    thing_template_key: row.thing_template_key,
    thing_template_name: row.thing_template_name,
    bi_directional: row.bi_directional === 1,
    alive: isAlive(row, now),
    user_defined_properties: JSON.parse(row.user_defined_properties) as Record<string, string>,
  };
}
