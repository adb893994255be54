/**
 * The realtime protocol's topics, subscription parameters and messages (docs/realtime.md).
 */
import { type Static, Type } from '@sinclair/typebox';
import { ALERT_TYPE_NAMES } from '../alerts/schemas.ts';
import type { EntityType } from '../core/change-feed.ts';
import { CommonParams, Key, OemParams, StringEnum } from '../core/http/schema.ts';
import type { PermissionClass } from '../core/permissions.ts';
import { presentStoredTimestamps, type TimeFormatter } from '../core/time.ts';

export const TOPICS = ['events', 'things', 'alerts', 'instructions'] as const;
export type Topic = (typeof TOPICS)[number];

/** What each topic follows in the change feed, and the permission (read) it needs. */
export const TOPIC_SOURCES: Record<Topic, { entityType: EntityType; permission: PermissionClass }> = {
  events: { entityType: 'Event', permission: 'data' },
  things: { entityType: 'Thing', permission: 'thing' },
  alerts: { entityType: 'Alert', permission: 'alert' },
  instructions: { entityType: 'Instruction', permission: 'instruction' },
};

/** Subscriptions one connection may hold at once. */
export const MAX_SUBSCRIPTIONS = 100;
/** Things one subscription may name in `thing_keys`. */
export const MAX_THING_KEYS = 1000;

/** A subscription's parameters: the members of a `subscribe` message, or the query of a stream. */
export const SubscribeParams = Type.Object({
  topic: StringEnum([...TOPICS], { description: 'what to receive' }),
  thing_keys: Type.Optional(
    Type.Array(Key(), { maxItems: MAX_THING_KEYS, description: 'only these things (an array, or comma-separated)' }),
  ),
  group_key: Type.Optional(Key('only the things of this group')),
  thing_template_key: Type.Optional(Key('only the things of this template')),
  metrics: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      maxItems: 1000,
      description: 'events: only these metrics; an event with none of them sends nothing',
    }),
  ),
  alert_type: Type.Optional(
    // The types an alert may have, as the alerts list checks them: any other is a 400, not a filter that never matches.
    Type.Array(Type.Unsafe<number>({ type: 'integer', enum: ALERT_TYPE_NAMES.map((_, type) => type) }), {
      maxItems: 100,
      description: 'alerts: only these types, integers from [0, 1, 2, 3]',
    }),
  ),
  ...OemParams,
  timestamp_format: CommonParams.timestamp_format,
  time_format: CommonParams.time_format,
  time_zone: CommonParams.time_zone,
});

export type SubscribeValues = Static<typeof SubscribeParams>;

/** A thing as a `thing` message tells it, from its snapshot (the Thing object at stored time). */
export interface ThingSnapshot {
  thing_key: string;
  thing_template_key: string;
  alive: boolean;
  last_event: { timestamp: number | string; data: unknown } | null;
  last_beat: number | string | null;
}

export type ThingChange = 'alive' | 'created' | 'updated' | 'deleted';

/** The members of a `thing` message after `type` and `id`. */
export function thingBody(thing: ThingSnapshot, change: ThingChange, time: TimeFormatter): string {
  const times = presentStoredTimestamps({ last_event: thing.last_event, last_beat: thing.last_beat }, time) as {
    last_event: unknown;
    last_beat: unknown;
  };
  return `${JSON.stringify({
    thing_key: thing.thing_key,
    alive: thing.alive,
    last_event: times.last_event,
    last_beat: times.last_beat,
    change,
  }).slice(1)}`;
}

/** A message: `{"type":..,"id":..,` and the rest of its members (`body`, a JSON object's text without its `{`). */
export function message(type: string, id: string, body: string): string {
  return `{"type":"${type}","id":${JSON.stringify(id)},${body}`;
}

/** A reply to one of the client's messages. */
export function reply(type: string, id: string | undefined, members: Record<string, unknown> = {}): string {
  return JSON.stringify({ type, ...(id !== undefined ? { id } : {}), ...members });
}
