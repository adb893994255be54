import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Store } from '../store/store.ts';
import { presentKeyPair } from './presenter.ts';
import {
  CreateKeyPairParams,
  KEY_PAIR_LIST,
  KeyPairKeyParams,
  KeyPairList,
  KeyPairOne,
  ListKeyPairsParams,
} from './schemas.ts';
import { createKeyPair, deleteKeyPair, listKeyPairs, requireKeyPair } from './service.ts';

const tags = ['Key pairs'];

export function keyPairRoutes(store: Store, box: SecretBox): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/key_pairs',
      tags,
      summary: 'List key pairs (without their secret keys)',
      access: permission('key_pair', 'read'),
      params: ListKeyPairsParams,
      response: KeyPairList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const list = toListQuery(params, KEY_PAIR_LIST);
        const { total, rows } = await listKeyPairs(store.db, await visibleOrganisations(), list);
        return listAnswer(
          'key_pairs',
          total,
          pageEcho,
          rows.map((r) => presentKeyPair(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/key_pairs/:key_pair_key',
      tags,
      summary: 'Get a key pair (without its secret key)',
      access: permission('key_pair', 'read'),
      params: KeyPairKeyParams,
      response: KeyPairOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        key_pair: presentKeyPair(
          await requireKeyPair(store.db, await visibleOrganisations(), params.key_pair_key),
          time,
        ),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/key_pairs',
      tags,
      summary: 'Create a key pair; its secret key is answered this once',
      access: permission('key_pair', 'create'),
      params: CreateKeyPairParams,
      response: KeyPairOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        const { row, secretKey } = await createKeyPair(
          store,
          box,
          actorOf(principal),
          await targetOrganisation(),
          params.key_pair,
          principal,
        );
        return { key_pair: presentKeyPair(row, time, secretKey) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/key_pairs/:key_pair_key',
      tags,
      summary: 'Delete a key pair: its device can no longer connect',
      access: permission('key_pair', 'delete'),
      params: KeyPairKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteKeyPair(store, actorOf(principal), await visibleOrganisations(), params.key_pair_key);
        return {};
      },
    }),
  ];
}
