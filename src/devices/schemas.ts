/**
 * What devices send (docs/devices.md, "HTTP"), over HTTP and MQTT alike. The objects are open: devices
 * send members of their own (type, additional_attributes, ...) beside these.
 */
import { Type } from '@sinclair/typebox';

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

export const RegisterBody = Type.Object({
  thing_key: DeviceKey,
  device_key: DeviceKey,
  name: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 200 })),
  description: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 2000 })),
  // null or empty text: as if absent (an SDK may send an unset flag so).
  bi_directional: Type.Optional(
    Type.Unsafe<boolean | number | string | null>({ type: ['boolean', 'number', 'string', 'null'] }),
  ),
  timestamp: Timestamp,
});

export const HeartbeatBody = Type.Object({
  thing_key: DeviceKey,
  device_key: DeviceKey,
  timestamp: Timestamp,
  events: Type.Optional(Type.Array(DeviceEvent, { description: 'a bulk of heartbeats' })),
});

export const EventBody = Type.Object({
  thing_key: DeviceKey,
  device_key: DeviceKey,
  timestamp: Timestamp,
  data: Type.Optional(Type.Unknown()),
  waypoint: Type.Optional(Type.Unknown()),
  events: Type.Optional(Type.Array(DeviceEvent, { description: 'a bulk of events' })),
});

export type RegisterInput = typeof RegisterBody.static;
export type HeartbeatInput = typeof HeartbeatBody.static;
export type EventInput = typeof EventBody.static;
