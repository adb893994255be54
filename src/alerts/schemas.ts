import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { CommonParams, Key, Nullable, OemParams } from '../core/http/schema.ts';

/** alert_type 0-3 and their names (docs/rules.md, "Alerts"). */
export const ALERT_TYPE_NAMES = ['Info', 'Warning', 'Error', 'Critical'] as const;

export const AlertType = Type.Integer({
  minimum: 0,
  maximum: 3,
  description: '0 Info, 1 Warning, 2 Error, 3 Critical',
});

export const Alert = Type.Object({
  alert_key: Type.String(),
  alert_type: AlertType,
  alert_type_string: Type.String({ description: 'Info, Warning, Error or Critical' }),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
  timestamp: Type.Union([Type.Integer(), Type.String()]),
  message: Type.String(),
  thing_key: Nullable(Type.String()),
  thing_name: Nullable(Type.String()),
  instruction_key: Type.Optional(Type.String({ description: 'present when the alert concerns an instruction' })),
  instruction_name: Type.Optional(Type.String()),
  data: Type.Object(
    {},
    {
      additionalProperties: true,
      description: 'thing (as it was when the alert was raised), instruction, alert_type_string, and what was sent',
    },
  ),
  status: Type.String({ description: 'open, acknowledged or cleared' }),
  acknowledged_at: Type.Union([Type.Integer(), Type.String(), Type.Null()]),
  acknowledged_by: Nullable(Type.String({ description: "the acknowledging user's e-mail" })),
  cleared_at: Type.Union([Type.Integer(), Type.String(), Type.Null()]),
  cleared_by: Nullable(Type.String({ description: "the clearing user's e-mail, or rule when its rule cleared it" })),
  rule_key: Nullable(Type.String({ description: 'the rule that raised it, or null' })),
  comment: Nullable(Type.String({ description: 'the last comment given on acknowledging or clearing' })),
});

/** An alert's statuses (docs/rules.md, "Alert lifecycle"). */
export const ALERT_STATUSES = ['open', 'acknowledged', 'cleared'] as const;

export const ALERT_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['timestamp', 'created_at', 'updated_at', 'alert_type', 'thing_key', 'message'],
  defaultOrderBy: 'timestamp',
  searchDescription: 'keywords matched against message, thing_key, thing_name and alert_type_string',
};

/** alert_type as an array, repeated query keys, or comma-separated text. */
const AlertTypeFilter = Type.Unsafe<number[]>({
  type: 'array',
  items: { type: 'integer', enum: [0, 1, 2, 3] },
  maxItems: 4,
  description: 'alert types to list: integers from [0, 1, 2, 3]',
});

export const ListAlertsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(ALERT_LIST),
  thing_key: Type.Optional(Key()),
  instruction_key: Type.Optional(Key()),
  alert_type: Type.Optional(AlertTypeFilter),
  status: Type.Optional(
    Type.Unsafe<(typeof ALERT_STATUSES)[number][]>({
      type: 'array',
      items: { type: 'string', enum: [...ALERT_STATUSES] },
      maxItems: 3,
      description: 'statuses to list: open, acknowledged, cleared (an array, repeated keys or comma-separated)',
    }),
  ),
  rule_key: Type.Optional(Key('only alerts raised by this rule (one naming no rule: an empty list)')),
});

export const GetAlertParams = Type.Object({ ...CommonParams, ...OemParams, alert_key: Key() });

export const AlertStepParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  alert_key: Key(),
  // Null is no comment, as leaving it out is (a bare string type would have the validator make it "").
  comment: Type.Optional(
    Nullable(Type.String({ maxLength: 2000, description: "kept as the alert's comment; null or absent: none given" })),
  ),
});

export const AlertList = ListResponse('alerts', Alert);
export const AlertOne = OneResponse('alert', Alert);

/** What a device sends to raise an alert or acknowledge an instruction (docs/devices.md, "Alerts from devices"). */
export const DeviceAlertInput = Type.Object(
  {
    thing_key: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    device_key: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    alert_key: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    message: Type.String({ maxLength: 10_000 }),
    alert_type: AlertType,
    data: Type.Optional(Nullable(Type.Object({}, { additionalProperties: true }))),
    timestamp: Type.Optional(
      Type.Unsafe<number | string | null>({ type: ['number', 'string', 'null'], description: 'epoch ms (or seconds)' }),
    ),
  },
  { additionalProperties: true },
);

export const DeviceAlertBody = Type.Object({ alert: DeviceAlertInput }, { additionalProperties: true });
export const DeviceAlertUpdateBody = Type.Object(
  { alert: DeviceAlertInput, alert_key: Key() },
  { additionalProperties: true },
);
