import type { Static } from '@sinclair/typebox';
import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { listThingsOfGroup } from '../groups/service.ts';
import type { Store } from '../store/store.ts';
import { presentThing } from './presenter.ts';
import {
  CreateThingParams,
  ListThingsParams,
  SetPropertiesParams,
  SetTraitsParams,
  THING_LIST,
  ThingKeyParams,
  ThingList,
  ThingOne,
  UpdateThingParams,
} from './schemas.ts';
import { createThing, deleteThing, listThings, requireThing, updateThing } from './service.ts';

const tags = ['Things'];

export function thingRoutes(store: Store): AnyRoute[] {
  /** The v3 and v1 forms of merging properties differ only in path and member name. */
  const mergePropertiesRoute = <S extends typeof SetPropertiesParams | typeof SetTraitsParams>(
    url: string,
    summary: string,
    params: S,
    properties: (params: Static<S>) => Record<string, string | number | boolean | null>,
  ) =>
    defineRoute({
      method: 'PUT',
      url,
      tags,
      summary,
      description: 'Values are kept as text; null removes a property.',
      access: permission('thing', 'update'),
      params,
      response: ThingOne,
      handler: async (call) => {
        const row = await updateThing(
          store,
          actorOf(call.principal),
          await call.visibleOrganisations(),
          call.params.thing_key,
          { user_defined_properties: properties(call.params) },
          { mergeProperties: true },
        );
        return { thing: presentThing(row, call.time) };
      },
    });

  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/things',
      tags,
      summary: 'List things',
      access: permission('thing', 'read'),
      params: ListThingsParams,
      response: ThingList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const organisationKeys = await visibleOrganisations();
        const filter = { thingTemplateKey: params.thing_template_key, biDirectional: params.bi_directional };
        const list = toListQuery(params, THING_LIST);
        const { total, rows } =
          params.group_key === undefined
            ? await listThings(store.db, { ...filter, organisationKeys }, list)
            : await listThingsOfGroup(store.db, organisationKeys, params.group_key, filter, list);
        const now = Date.now();
        return listAnswer(
          'things',
          total,
          pageEcho,
          rows.map((r) => presentThing(r, time, now)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/things/:thing_key',
      tags,
      summary: 'Get a thing',
      access: permission('thing', 'read'),
      params: ThingKeyParams,
      response: ThingOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        thing: presentThing(await requireThing(store.db, await visibleOrganisations(), params.thing_key), time),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/things',
      tags,
      summary: 'Create a thing',
      description: 'thing_key may be chosen by the client (1-64 of A-Za-z0-9._-); otherwise it is generated.',
      access: permission('thing', 'create'),
      params: CreateThingParams,
      response: ThingOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        const row = await createThing(store, actorOf(principal), await targetOrganisation(), params.thing);
        return { thing: presentThing(row, time) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/things/:thing_key',
      tags,
      summary: 'Update a thing',
      description: 'user_defined_properties, when given, replaces the whole map; set_user_defined_properties merges.',
      access: permission('thing', 'update'),
      params: UpdateThingParams,
      response: ThingOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const row = await updateThing(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.thing_key,
          params.thing,
        );
        return { thing: presentThing(row, time) };
      },
    }),
    mergePropertiesRoute(
      '/api/v3/things/:thing_key/set_user_defined_properties',
      'Merge user-defined properties into a thing',
      SetPropertiesParams,
      (params) => params.user_defined_properties,
    ),
    mergePropertiesRoute(
      '/api/v1/sensors/:thing_key/set_traits',
      'Merge traits into a sensor (v1 form of set_user_defined_properties)',
      SetTraitsParams,
      (params) => params.traits,
    ),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/things/:thing_key',
      tags,
      summary: 'Delete a thing',
      description: 'The thing leaves every static group.',
      access: permission('thing', 'delete'),
      params: ThingKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteThing(store, actorOf(principal), await visibleOrganisations(), params.thing_key);
        return {};
      },
    }),
  ];
}
