import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { EmptyObject } from '../core/http/schema.ts';
import type { Store } from '../store/store.ts';
import { toDataUri } from './configuration.ts';
import { presentGateway } from './presenter.ts';
import { readRegistration } from './registration.ts';
import {
  CreateGatewayParams,
  GATEWAY_LIST,
  GatewayConfiguration,
  GatewayKeyParams,
  GatewayList,
  GatewayOne,
  ListGatewaysParams,
  RegisterGatewayParams,
  UpdateGatewayParams,
} from './schemas.ts';
import { createGateway, deleteGateway, listGateways, requireGateway, updateGateway } from './service.ts';

const tags = ['Gateways'];

export function gatewayRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/gateway',
      tags,
      summary: 'List gateways',
      description: "The array is named `gateway` (singular), as the platform's clients read it.",
      access: permission('gateway', 'read'),
      params: ListGatewaysParams,
      response: GatewayList,
      handler: async ({ params, pageEcho, visibleOrganisations }) => {
        const list = toListQuery(params, GATEWAY_LIST);
        const { total, rows } = await listGateways(store.db, await visibleOrganisations(), list);
        return listAnswer('gateway', total, pageEcho, rows.map(presentGateway));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/gateway/:gateway_key',
      tags,
      summary: 'Get a gateway',
      access: permission('gateway', 'read'),
      params: GatewayKeyParams,
      response: GatewayOne,
      handler: async ({ params, visibleOrganisations }) => ({
        gateway: presentGateway(await requireGateway(store.db, await visibleOrganisations(), params.gateway_key)),
      }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/gateway/:gateway_key/configuration',
      tags,
      summary: "Get a gateway's configuration",
      description: 'A data URI whose JSON is the gateway object itself, adapters included.',
      access: permission('gateway', 'read'),
      params: GatewayKeyParams,
      response: GatewayConfiguration,
      handler: async ({ params, visibleOrganisations }) => {
        const row = await requireGateway(store.db, await visibleOrganisations(), params.gateway_key);
        return { result: toDataUri(presentGateway(row)) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/gateway',
      tags,
      summary: 'Create a gateway',
      description: 'With is_oem, child_organisation_key names the child organisation the gateway is created in.',
      access: permission('gateway', 'create'),
      params: CreateGatewayParams,
      response: GatewayOne,
      handler: async ({ params, principal, targetOrganisation }) => {
        const row = await createGateway(store, actorOf(principal), await targetOrganisation(), params.gateway);
        return { gateway: presentGateway(row) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/gateway/register',
      aliases: ['/api/v3/gateways/register'],
      tags,
      summary: 'Register a gateway',
      description:
        'Either gateway_key, type, version and configuration, or gateway: {gateway_key, gateway_type, ' +
        'gateway_version, config}. The configuration (a data URI, JSON text or a JSON object) may carry ' +
        'name, tags, gateway_type, gateway_version and adapters, which replace the stored ones.',
      access: permission('gateway', 'update'),
      params: RegisterGatewayParams,
      response: EmptyObject,
      handler: async ({ params, principal, visibleOrganisations }) => {
        const registration = readRegistration(params);
        await updateGateway(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          registration.gatewayKey,
          registration.changes,
          registration.adaptersParam,
        );
        return {};
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/gateway/:gateway_key',
      tags,
      summary: 'Update a gateway',
      description: 'Fields not given keep their value; adapters, when given, replace the stored list.',
      access: permission('gateway', 'update'),
      params: UpdateGatewayParams,
      response: GatewayOne,
      handler: async ({ params, principal, visibleOrganisations }) => {
        const row = await updateGateway(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.gateway_key,
          params.gateway,
        );
        return { gateway: presentGateway(row) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/gateway/:gateway_key',
      tags,
      summary: 'Delete a gateway',
      access: permission('gateway', 'delete'),
      params: GatewayKeyParams,
      response: EmptyObject,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteGateway(store, actorOf(principal), await visibleOrganisations(), params.gateway_key);
        return {};
      },
    }),
  ];
}
