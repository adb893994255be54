import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { ChildOrganisationParams, CommonParams, Key, OemParams } from '../core/http/schema.ts';

export const KeyPair = Type.Object({
  key_pair_key: Type.String(),
  name: Type.String(),
  access_key: Type.String({ description: 'X-Access-Key of the device, and its MQTT user name' }),
  role_key: Type.String({ description: 'what the device may do; the built-in Agent role by default' }),
  secret_key: Type.Optional(
    Type.String({ description: 'only in the answer to the create request: keep it, it is not shown again' }),
  ),
  created_at: Type.Union([Type.Integer(), Type.String()]),
});

export const KeyPairInput = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), role_key: Type.Optional(Key()) },
  { additionalProperties: false },
);

export const KEY_PAIR_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'name'],
  searchDescription: 'keywords matched against name and access_key',
};

export const ListKeyPairsParams = Type.Object({ ...CommonParams, ...OemParams, ...listParams(KEY_PAIR_LIST) });
export const KeyPairKeyParams = Type.Object({ ...CommonParams, ...OemParams, key_pair_key: Key() });
export const CreateKeyPairParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, key_pair: KeyPairInput });

export const KeyPairList = ListResponse('key_pairs', KeyPair);
export const KeyPairOne = OneResponse('key_pair', KeyPair);

/** Where devices reach this server (docs/devices.md, "Device settings"). */
export const DeviceSettings = Type.Object({
  http_url: Type.String({ description: 'the base address of the device API over HTTP (PUBLIC_BASE_URL)' }),
  mqtt_port: Type.Union([Type.Integer(), Type.Null()], {
    description: "the embedded broker's plain MQTT port; null when it has none or an external broker serves devices",
  }),
  mqtts_port: Type.Union([Type.Integer(), Type.Null()], {
    description: "the embedded broker's MQTT-over-TLS port; null without TLS",
  }),
  external_broker: Type.Boolean({
    description: 'devices connect to the external MQTT broker the operator runs (MQTT_URL), not to this server',
  }),
});
export const DeviceSettingsParams = Type.Object({ ...CommonParams });
export const DeviceSettingsAnswer = Type.Object({ device_settings: DeviceSettings });
