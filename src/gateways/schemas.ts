import { type Static, Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { ChildOrganisationParams, CommonParams, Key, Nullable, OemParams } from '../core/http/schema.ts';

export const Adapter = Type.Object({
  type: Nullable(Type.String()),
  configuration: Type.String({ description: 'JSON text' }),
  enabled: Type.Boolean(),
  adapter_pid: Type.String(),
});

/** A gateway as answered: no timestamps, tags comma-joined (docs/gateways.md, "The gateway object"). */
export const Gateway = Type.Object({
  gateway_key: Type.String(),
  gateway_type: Nullable(Type.String()),
  name: Type.String(),
  gateway_version: Nullable(Type.String()),
  tags: Type.String({ description: 'comma-joined' }),
  adapters: Type.Array(Adapter),
});

const GatewayName = Type.String({ minLength: 1, maxLength: 200 });
const ShortText = Type.String({ maxLength: 200 });
const Tags = Type.Union(
  [Type.String({ maxLength: 10_000 }), Type.Array(Type.String({ maxLength: 200 }), { maxItems: 200 })],
  {
    description: 'array of strings or one comma-joined string; returned comma-joined',
  },
);

export const AdapterInput = Type.Object(
  {
    type: Type.Optional(Nullable(ShortText)),
    configuration: Type.Optional(Type.String({ description: 'JSON text; default {}' })),
    enabled: Type.Optional(Type.Boolean({ description: 'default true' })),
    adapter_pid: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'unique within the gateway; generated when absent' }),
    ),
  },
  { additionalProperties: false },
);
export type AdapterInput = Static<typeof AdapterInput>;

const Adapters = Type.Array(AdapterInput, { maxItems: 100, description: 'replaces the stored adapters' });

const changeFields = {
  gateway_type: Type.Optional(Nullable(ShortText)),
  gateway_version: Type.Optional(Nullable(ShortText)),
  tags: Type.Optional(Tags),
  adapters: Type.Optional(Adapters),
};

export const GatewayInput = Type.Object({ name: GatewayName, ...changeFields }, { additionalProperties: false });
export const GatewayChanges = Type.Object(
  { name: Type.Optional(GatewayName), ...changeFields },
  { additionalProperties: false },
);
export type GatewayChanges = Static<typeof GatewayChanges>;

/**
 * What the configuration sent at registration may hold once decoded: the gateway object's own fields,
 * so a gateway can send back what `/configuration` gave it.
 */
export const RegistrationConfiguration = Type.Object(
  { gateway_key: Type.Optional(Key()), ...GatewayChanges.properties },
  { additionalProperties: false },
);

const ConfigurationText = Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })], {
  description: 'a data URI (data:application/json;base64,...), JSON text, or a JSON object',
});

export const GATEWAY_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'gateway_key'],
  searchDescription: 'keywords matched against name and tags',
};

export const ListGatewaysParams = Type.Object({ ...CommonParams, ...OemParams, ...listParams(GATEWAY_LIST) });
export const GatewayKeyParams = Type.Object({ ...CommonParams, ...OemParams, gateway_key: Key() });
export const CreateGatewayParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, gateway: GatewayInput });
export const UpdateGatewayParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  gateway_key: Key(),
  gateway: GatewayChanges,
});
export const RegisterGatewayParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  gateway_key: Type.Optional(Key('the gateway to register')),
  type: Type.Optional(Nullable(ShortText)),
  version: Type.Optional(Nullable(ShortText)),
  configuration: Type.Optional(ConfigurationText),
  gateway: Type.Optional(
    Type.Object(
      {
        gateway_key: Type.Optional(Key()),
        gateway_type: Type.Optional(Nullable(ShortText)),
        gateway_version: Type.Optional(Nullable(ShortText)),
        config: Type.Optional(ConfigurationText),
      },
      { additionalProperties: false, description: 'the other form of the same parameters' },
    ),
  ),
});
export type RegisterGatewayParams = Static<typeof RegisterGatewayParams>;

export const GatewayList = ListResponse('gateway', Gateway);
export const GatewayOne = OneResponse('gateway', Gateway);
export const GatewayConfiguration = Type.Object({
  result: Type.String({ description: 'data:application/json;base64,... of the gateway object' }),
});
