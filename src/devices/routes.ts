/**
 * The device HTTP interface (docs/devices.md, "HTTP"): what the edge SDKs call, signed with a key pair.
 * Success is 200 with `{}`; errors carry `errors: [{code, message}]` with string codes, as the SDKs
 * parse them.
 */
import { BULK_BODY_LIMIT } from '../core/http/body.ts';
import { type Admission, type AnyRoute, defineRoute } from '../core/http/route.ts';
import { EmptyObject } from '../core/http/schema.ts';
import { httpSource } from '../events/admission.ts';
import { EventBody, HeartbeatBody, RegisterBody } from './schemas.ts';
import type { DeviceService } from './service.ts';

const tags = ['Devices'];
const device = { kind: 'device' } as const;
const withJson = (path: string) => ({ url: path, aliases: [`${path}.json`] });

export function deviceRoutes(devices: DeviceService, eventAdmission?: Admission): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      ...withJson('/api/v3/things/register'),
      tags,
      summary: 'Register a thing (devices): creates it in the Default template when it is new',
      access: device,
      params: RegisterBody,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        await devices.register(principal, params);
        return {};
      },
    }),
    defineRoute({
      method: 'POST',
      ...withJson('/api/v3/things/heartbeat'),
      tags,
      summary: 'Heartbeat of a thing, or a bulk of heartbeats (devices)',
      access: device,
      params: HeartbeatBody,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        await devices.heartbeat(principal, params);
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
      admission: eventAdmission,
      params: EventBody,
      response: EmptyObject,
      handler: async ({ principal, params, request }) => {
        // One client of a key pair, for fair shares of a busy writer (events/fair-share.ts).
        await devices.event(principal, params, 'http', httpSource(principal, request));
        return {};
      },
    }),
  ];
}
