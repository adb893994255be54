import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { CommonParams, Key, Nullable, OemParams, StringEnum } from '../core/http/schema.ts';
import { type ApiVersion, typeNamesOf } from './versions.ts';

const Timestamp = Type.Union([Type.Integer(), Type.String()]);

/** A notification action as answered; each kind has its own fields (docs/rules.md, "Notification actions"). */
export const NotificationAction = Type.Object({
  notification_action_key: Type.String(),
  type: Type.String(),
  rule_key: Type.String(),
  to: Type.Optional(Type.String()),
  cc: Type.Optional(Type.String()),
  bcc: Type.Optional(Type.String()),
  subject: Type.Optional(Nullable(Type.String())),
  body: Type.Optional(Nullable(Type.String())),
  method: Type.Optional(Type.String()),
  url: Type.Optional(Type.String()),
  headers: Type.Optional(Type.Object({}, { additionalProperties: true })),
  query: Type.Optional(Type.Object({}, { additionalProperties: true })),
  name: Type.Optional(Type.String()),
  phone_number: Type.Optional(Type.String()),
  created_at: Type.Optional(Timestamp),
  updated_at: Type.Optional(Timestamp),
});

const StringMap = Type.Object({}, { additionalProperties: true, description: 'names to text values' });

/** Every field any kind accepts; which are required or allowed depends on `type` (service.ts). */
const fields = (version: ApiVersion) => ({
  type: StringEnum(typeNamesOf(version)),
  rule_key: Key('the rule the action belongs to'),
  to: Type.String({ minLength: 1, maxLength: 2000, description: 'e-mail: recipients, comma-separated' }),
  cc: Type.String({ maxLength: 2000 }),
  bcc: Type.String({ maxLength: 2000 }),
  subject: Nullable(Type.String({ maxLength: 500 })),
  body: Type.Unsafe<string | Record<string, unknown> | null>({
    type: ['string', 'object', 'null'],
    maxLength: 100_000,
    description:
      version === 'v3'
        ? 'HTTP call: request body text; ThingUserDefinedPropertiesAction: {user_defined_properties: {...}}; SMS: message template'
        : 'HTTP call: request body text; SensorTraitsAction: {traits: {...}}',
  }),
  method: Type.String({ minLength: 1, maxLength: 10, description: 'GET, POST, PUT, PATCH or DELETE' }),
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'http(s) URL; $THING$ is replaced by the thing key' }),
  headers: StringMap,
  query: StringMap,
  ...(version === 'v3'
    ? {
        name: Type.String({ minLength: 1, maxLength: 200, description: 'SMS: recipient name' }),
        phone_number: Type.String({ minLength: 1, maxLength: 50, description: 'SMS: recipient number' }),
      }
    : {}),
});

export function actionSchemas(version: ApiVersion) {
  const f = fields(version);
  const optional = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, Type.Optional(v)]));
  const CreateInput = Type.Object({ ...optional, type: f.type, rule_key: f.rule_key }, { additionalProperties: false });
  const UpdateInput = Type.Object({ ...optional, type: f.type }, { additionalProperties: false });
  const list: ListSpec = {
    defaultPer: 20,
    sortable: ['created_at', 'updated_at', 'type', 'notification_action_key'],
    searchDescription: 'accepted and ignored',
  };
  return {
    list,
    ListParams: Type.Object({
      ...CommonParams,
      ...OemParams,
      ...listParams(list),
      rule_key: Key('the rule whose actions to list'),
      type: Type.Optional(StringEnum(typeNamesOf(version))),
    }),
    KeyParams: Type.Object({ ...CommonParams, ...OemParams, notification_action_key: Key() }),
    CreateParams: Type.Object({ ...CommonParams, ...OemParams, notification_action: CreateInput }),
    UpdateParams: Type.Object({
      ...CommonParams,
      ...OemParams,
      notification_action_key: Key(),
      notification_action: UpdateInput,
    }),
  };
}

export interface ActionInput {
  type: string;
  rule_key?: string | undefined;
  to?: string | undefined;
  cc?: string | undefined;
  bcc?: string | undefined;
  subject?: string | null | undefined;
  body?: string | Record<string, unknown> | null | undefined;
  method?: string | undefined;
  url?: string | undefined;
  headers?: Record<string, unknown> | undefined;
  query?: Record<string, unknown> | undefined;
  name?: string | undefined;
  phone_number?: string | undefined;
}

export const ActionList = ListResponse('notification_actions', NotificationAction);
export const ActionOne = OneResponse('notification_action', NotificationAction);

export const DELIVERY_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['at', 'attempt', 'status'],
  defaultOrderBy: 'at',
  searchDescription: 'keywords matched against status and error',
};

export const ListDeliveriesParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(DELIVERY_LIST),
  notification_action_key: Key(),
});

export const DeliveryAttempt = Type.Object({
  delivery_key: Type.String({ description: 'the queued delivery; the same for every attempt of it' }),
  attempt: Type.Integer({ description: '1 for the first attempt' }),
  status: Type.String({ description: 'delivered or failed' }),
  error: Nullable(Type.String()),
  at: Timestamp,
  duration_ms: Type.Integer(),
  rule_key: Nullable(Type.String({ description: 'the rule whose firing queued the delivery' })),
  rule_name: Nullable(Type.String({ description: "the rule's name when it fired" })),
  thing_key: Nullable(Type.String({ description: 'the thing whose event fired the rule' })),
  thing_name: Nullable(Type.String({ description: "the thing's name when the rule fired" })),
  alert_key: Nullable(Type.String({ description: 'the alert the firing raised, or null when it raised none' })),
  message: Nullable(Type.String({ description: 'the message the delivery carried' })),
});

export const DeliveryList = ListResponse('deliveries', DeliveryAttempt);
