import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentApiKey } from './presenter.ts';
import {
  API_KEY_LIST,
  ApiKeyKeyParams,
  ApiKeyList,
  ApiKeyOne,
  CreateApiKeyParams,
  ListApiKeysParams,
} from './schemas.ts';
import { createApiKey, deleteApiKey, listApiKeys, requireApiKey } from './service.ts';

const tags = ['API keys'];

export function apiKeyRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/api_keys',
      tags,
      summary: 'List API keys (without their tokens)',
      access: permission('api_key', 'read'),
      params: ListApiKeysParams,
      response: ApiKeyList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const list = toListQuery(params, API_KEY_LIST);
        const { total, rows } = await listApiKeys(store.db, await visibleOrganisations(), list);
        return listAnswer(
          'api_keys',
          total,
          pageEcho,
          rows.map((r) => presentApiKey(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/api_keys/:api_key_key',
      tags,
      summary: 'Get an API key (without its token)',
      access: permission('api_key', 'read'),
      params: ApiKeyKeyParams,
      response: ApiKeyOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        api_key: presentApiKey(await requireApiKey(store.db, await visibleOrganisations(), params.api_key_key), time),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/api_keys',
      tags,
      summary: 'Create an API key; its token is answered this once',
      description:
        "Send the token as X-Auth-Token. The key acts as its creator with its role (by default the creator's; " +
        'one with a permission the creator lacks is a 403), until deleted or past expires_at. With is_oem, ' +
        "child_organisation_key makes it in that child, with one of the child's roles (by default its account admin).",
      access: permission('api_key', 'create'),
      params: CreateApiKeyParams,
      response: ApiKeyOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        const organisationKey = await targetOrganisation();
        const { row, token } = await createApiKey(
          store,
          actorOf(principal),
          principal,
          params.api_key,
          organisationKey,
        );
        return { api_key: presentApiKey(row, time, token) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/api_keys/:api_key_key',
      tags,
      summary: 'Delete an API key: its token stops working at once, on every instance',
      access: permission('api_key', 'delete'),
      unlimited: true,
      params: ApiKeyKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteApiKey(store, actorOf(principal), principal, await visibleOrganisations(), params.api_key_key);
        return {};
      },
    }),
  ];
}
