import { Type } from '@sinclair/typebox';
import { BULK_BODY_LIMIT } from '../core/http/body.ts';
import { type Admission, type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { CommonParams, EmptyObject, Key } from '../core/http/schema.ts';
import type { EventIngest } from './ingest.ts';

const PostEventsParams = Type.Object({
  ...CommonParams,
  thing_key: Key(),
  events: Type.Array(
    Type.Object(
      {
        timestamp: Type.Optional(
          Type.Unsafe<number | string>({
            type: ['number', 'string'],
            description: 'epoch ms (seconds when under 10^11)',
          }),
        ),
        data: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), { description: 'metric name to value; objects nest' }),
        ),
        waypoint: Type.Optional(Type.Unknown()),
      },
      { additionalProperties: false },
    ),
    { minItems: 1, maxItems: 10_000 },
  ),
});

export function eventRoutes(ingest: EventIngest, admission?: Admission): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v3/things/:thing_key/events',
      tags: ['Events'],
      summary: 'Store events of a thing',
      description: 'Answered only after the events are committed; stored whole or not at all.',
      access: permission('data', 'create'),
      bodyLimit: BULK_BODY_LIMIT,
      admission,
      params: PostEventsParams,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        await ingest.ingest(
          principal,
          params.events.map((e) => ({ ...e, thingKey: params.thing_key })),
          undefined,
          '',
          'api',
        );
        return {};
      },
    }),
  ];
}
