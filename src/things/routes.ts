import type { Static } from '@sinclair/typebox';
import { actorOf } from '../audit/recorder.ts';
import { forbidden, requiredParam } from '../core/errors.ts';
import { BULK_BODY_LIMIT, isCsv } from '../core/http/body.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { grants } from '../core/permissions.ts';
import { listThingsOfGroup } from '../groups/service.ts';
import type { Store } from '../store/store.ts';
import { csvRows, importThings } from './import.ts';
import { presentThing } from './presenter.ts';
import {
  CreateThingParams,
  IMPORT_MAX_ROWS,
  ImportAnswer,
  ImportThingsParams,
  ListThingsParams,
  SetPropertiesParams,
  SetTraitsParams,
  THING_LIST,
  ThingKeyParams,
  ThingList,
  ThingOne,
  thingFilterOf,
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
        const now = Date.now();
        const filter = thingFilterOf(params, now);
        const list = toListQuery(params, THING_LIST);
        const { total, rows } =
          params.group_key === undefined
            ? await listThings(store.db, { ...filter, organisationKeys }, list)
            : await listThingsOfGroup(store.db, organisationKeys, params.group_key, filter, list);
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
      method: 'POST',
      url: '/api/v3/things/import',
      tags,
      summary: 'Import things (bulk provisioning)',
      description:
        'A text/csv body (a header row naming Thing fields: thing_key, name, description, tags, thing_template_key, ' +
        'bi_directional, user_defined_properties.<name>; an empty cell is a field not given) or a JSON body ' +
        `{things: [...]}; at most ${IMPORT_MAX_ROWS} rows and ${BULK_BODY_LIMIT / 1024 / 1024} MiB. ` +
        'Each row is checked as POST /api/v3/things checks its thing; thing_template_key defaults to the Default ' +
        'template. Rows that fail are answered by number (from 1, over the data rows) with their errors; the others ' +
        'are written in one transaction with one audit trail each, unless dry_run, or atomic and any row failed. ' +
        'mode=upsert updates the existing things of the organisation (as PUT /api/v3/things/:thing_key) and needs ' +
        'the permission to update things too.',
      access: permission('thing', 'create'),
      params: ImportThingsParams,
      response: ImportAnswer,
      bodyLimit: BULK_BODY_LIMIT,
      acceptsCsv: true,
      handler: async ({ params, principal, request, targetOrganisation }) => {
        const mode = params.mode as 'create' | 'upsert'; // defaulted by the schema
        if (mode === 'upsert' && !grants(principal.abilities, 'thing', 'update')) {
          throw forbidden('your role lacks the permission to update thing, which mode=upsert needs');
        }
        let rows: unknown[];
        if (isCsv(request)) rows = csvRows(String(request.body));
        else if (params.things === undefined) throw requiredParam('things');
        else rows = params.things;
        return importThings(store, actorOf(principal), await targetOrganisation(), rows, {
          mode,
          dryRun: params.dry_run === true,
          atomic: params.atomic === true,
        });
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
