import type { Static } from '@sinclair/typebox';
import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Store } from '../store/store.ts';
import { presentKeyPair } from './presenter.ts';
import {
  CreateKeyPairParams,
  type DeviceSettings,
  DeviceSettingsAnswer,
  DeviceSettingsParams,
  KEY_PAIR_LIST,
  KeyPairKeyParams,
  KeyPairList,
  KeyPairOne,
  ListKeyPairsParams,
} from './schemas.ts';
import { createKeyPair, deleteKeyPair, listKeyPairs, requireKeyPair } from './service.ts';

const tags = ['Key pairs'];

export type DeviceSettingsValue = Static<typeof DeviceSettings>;

export function keyPairRoutes(store: Store, box: SecretBox, deviceSettings: () => DeviceSettingsValue): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/device_settings',
      tags,
      summary: "Where devices reach this server: the device API's address and the MQTT ports",
      description:
        'What a device needs besides its key pair (docs/devices.md, "Device settings"); the console shows it with a new key pair.',
      access: permission('key_pair', 'read'),
      params: DeviceSettingsParams,
      response: DeviceSettingsAnswer,
      handler: async () => ({ device_settings: deviceSettings() }),
    }),
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
