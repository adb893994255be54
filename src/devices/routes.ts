/**
 * The device HTTP interface (DEVICES.md): what the edge SDKs call, signed with a key pair. Success is
 * 200 with `{}`; errors carry `errors: [{code, message}]` with string codes, as the SDKs parse them.
 */
import { Type } from '@sinclair/typebox';
import { actorOf } from '../audit/recorder.ts';
import { ApiError, invalidParam, requiredParam } from '../core/errors.ts';
import { BULK_BODY_LIMIT } from '../core/http/body.ts';
import { type AnyRoute, defineRoute, requirePermission } from '../core/http/route.ts';
import { EmptyObject } from '../core/http/schema.ts';
import type { Principal } from '../core/principal.ts';
import type { EventIngest, IncomingEvent } from '../events/ingest.ts';
import type { Store } from '../store/store.ts';
import { findDefaultTemplate } from '../templates/repository.ts';
import { findThing } from '../things/repository.ts';
import { createThing, updateThing } from '../things/service.ts';

const tags = ['Devices'];

const DeviceKey = Type.Optional(
  Type.Unsafe<string | null>({
    type: ['string', 'null'],
    maxLength: 64,
    description: 'the thing key (device_key is a synonym)',
  }),
);
const Timestamp = Type.Optional(
  Type.Unsafe<number | string | null>({
    type: ['number', 'string', 'null'],
    description: 'epoch ms (seconds when under 10^11); default now',
  }),
);
const DeviceEvent = Type.Object(
  {
    thing_key: DeviceKey,
    device_key: DeviceKey,
    timestamp: Timestamp,
    data: Type.Optional(Type.Unknown()),
    waypoint: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);

const RegisterParams = Type.Object({
  thing_key: DeviceKey,
  device_key: DeviceKey,
  name: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 200 })),
  description: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 2000 })),
  bi_directional: Type.Optional(Type.Unsafe<boolean | number | string>({ type: ['boolean', 'number', 'string'] })),
  user_defined_properties: Type.Optional(Type.Unknown()),
  tags: Type.Optional(Type.Unknown()),
  timestamp: Timestamp,
});
const HeartbeatParams = Type.Object({
  thing_key: DeviceKey,
  device_key: DeviceKey,
  timestamp: Timestamp,
  events: Type.Optional(Type.Array(DeviceEvent, { description: 'a bulk of heartbeats' })),
});
const EventParams = Type.Object({
  thing_key: DeviceKey,
  device_key: DeviceKey,
  timestamp: Timestamp,
  data: Type.Optional(Type.Unknown()),
  waypoint: Type.Optional(Type.Unknown()),
  events: Type.Optional(Type.Array(DeviceEvent, { description: 'a bulk of events' })),
});

/** `thing_key`, or `device_key` instead; an empty string counts as absent. */
export function thingKeyOf(item: { thing_key?: string | null; device_key?: string | null }, param = ''): string {
  const key = item.thing_key || item.device_key;
  if (!key) throw requiredParam(`${param}thing_key`);
  return key;
}

function readBoolean(value: unknown): boolean | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === true || value === 1 || value === '1' || value === 'true') return true;
  if (value === false || value === 0 || value === '0' || value === 'false') return false;
  throw invalidParam('bi_directional', 'must be true, false, 1 or 0');
}

const device = { kind: 'device' } as const;
const withJson = (path: string) => ({ url: path, aliases: [`${path}.json`] });

export function deviceRoutes(store: Store, ingest: EventIngest): AnyRoute[] {
  async function register(principal: Principal, params: typeof RegisterParams.static) {
    const key = thingKeyOf(params);
    const biDirectional = readBoolean(params.bi_directional);
    const existing = await findThing(store.db, [principal.organisationKey], key);
    const changes = {
      ...(params.name ? { name: params.name } : {}),
      ...(typeof params.description === 'string' ? { description: params.description } : {}),
      ...(biDirectional !== undefined ? { bi_directional: biDirectional } : {}),
    };
    if (existing) {
      requirePermission(principal, 'thing', 'update');
      if (Object.keys(changes).length > 0)
        await updateThing(store, actorOf(principal), [principal.organisationKey], key, changes);
      return;
    }
    requirePermission(principal, 'thing', 'create');
    const template = await findDefaultTemplate(store.db, principal.organisationKey);
    if (!template) throw new ApiError(500, [{ code: 'internal', message: 'the organisation has no Default template' }]);
    await createThing(store, actorOf(principal), principal.organisationKey, {
      thing_key: key,
      name: params.name || key,
      thing_template_key: template.thing_template_key,
      ...changes,
    });
  }

  return [
    defineRoute({
      method: 'POST',
      ...withJson('/api/v3/things/register'),
      tags,
      summary: 'Register a thing (devices): creates it in the Default template when it is new',
      access: device,
      params: RegisterParams,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        await register(principal, params);
        return {};
      },
    }),
    defineRoute({
      method: 'POST',
      ...withJson('/api/v3/things/heartbeat'),
      tags,
      summary: 'Heartbeat of a thing, or a bulk of heartbeats (devices)',
      access: device,
      params: HeartbeatParams,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        requirePermission(principal, 'thing', 'update');
        const keys = params.events ? params.events.map((e, i) => thingKeyOf(e, `events.${i}.`)) : [thingKeyOf(params)];
        await ingest.heartbeats(principal, keys);
        return {};
      },
    }),
    defineRoute({
      method: 'POST',
      ...withJson('/api/v3/things/event'),
      tags,
      summary: 'An event of a thing, or a bulk of events (devices)',
      description: 'Answered only after the events are committed. A bulk is stored whole or not at all.',
      access: device,
      bodyLimit: BULK_BODY_LIMIT,
      params: EventParams,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        requirePermission(principal, 'data', 'create');
        const incoming: IncomingEvent[] = params.events
          ? params.events.map((e, i) => ({ ...e, thingKey: thingKeyOf(e, `events.${i}.`) }))
          : [{ ...params, thingKey: thingKeyOf(params) }];
        await ingest.ingest(principal, incoming, params.events ? params.timestamp : undefined, '');
        return {};
      },
    }),
  ];
}
