import { Type } from '@sinclair/typebox';
import { actorOf } from '../audit/recorder.ts';
import { ApiError, invalidParam, requiredParam } from '../core/errors.ts';
import { BULK_BODY_LIMIT } from '../core/http/body.ts';
import { type Admission, type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { CommonParams, EmptyObject, Key, OemParams } from '../core/http/schema.ts';
import type { Principal } from '../core/principal.ts';
import { readBound } from '../queries/thing-data.ts';
import type { Executor, Store } from '../store/store.ts';
import { findThing } from '../things/service.ts';
import type { EventIngest } from './ingest.ts';
import { deleteEventRange } from './service.ts';

/**
 * Who stores events of a thing an OEM parent names with is_oem: the caller acting in the thing's
 * organisation, so that its events count against that organisation's limits as its own devices' do.
 * A thing the caller cannot see is left to the ingest's 404.
 */
async function actingFor(
  db: Executor,
  principal: Principal,
  organisations: string[],
  thingKey: string,
): Promise<Principal> {
  const thing = await findThing(db, organisations, thingKey);
  if (!thing || thing.organisation_key === principal.organisationKey) return principal;
  return Object.freeze({ ...principal, organisationKey: thing.organisation_key, organisationIsOem: false });
}

const Bound = (description: string) =>
  Type.Unsafe<string | number>({
    type: ['string', 'number'],
    description: `${description}: yyyy/mm/dd hh:mm:ss or yyyy-mm-dd hh:mm:ss in time_zone, or epoch seconds; inclusive`,
  });

const DeleteEventsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_key: Key(),
  from: Bound('the first event time deleted'),
  to: Bound('the last event time deleted'),
});

const PostEventsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
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

/**
 * Stores events a user sent: what the devices' interface answers 422 (a value the template refuses, a
 * time more than a day ahead) is a 400 here, as for any value outside what the REST API allows
 * (docs/api.md, "Errors").
 */
async function storeUserEvents(store: () => Promise<void>): Promise<void> {
  try {
    await store();
  } catch (error) {
    if (error instanceof ApiError && error.status === 422) throw new ApiError(400, error.errors);
    throw error;
  }
}

export function eventRoutes(store: Store, ingest: EventIngest, admission?: Admission): AnyRoute[] {
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
      handler: async ({ principal, params, visibleOrganisations }) => {
        const sender = params.is_oem
          ? await actingFor(store.db, principal, await visibleOrganisations(), params.thing_key)
          : principal;
        await storeUserEvents(() =>
          ingest.ingest(
            sender,
            params.events.map((e) => ({ ...e, thingKey: params.thing_key })),
            undefined,
            true,
            'api',
          ),
        );
        return {};
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/things/:thing_key/events',
      tags: ['Events'],
      summary: 'Delete the events of a thing in a range',
      description:
        'from and to are required and read as in thing_data. The rollups, the event count and the last event are corrected in the same transaction; audited as an update of the thing. Answer: {"deleted": N}.',
      access: permission('data', 'delete'),
      params: DeleteEventsParams,
      response: Type.Object({ deleted: Type.Integer() }),
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const from = readBound(params.from, time.zone, 'from');
        const to = readBound(params.to, time.zone, 'to', true);
        if (from === undefined) throw requiredParam('from');
        if (to === undefined) throw requiredParam('to');
        if (from > to) throw invalidParam('from', 'must not be after to');
        const deleted = await deleteEventRange(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.thing_key,
          from,
          to,
        );
        return { deleted };
      },
    }),
  ];
}
