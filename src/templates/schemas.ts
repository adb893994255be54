import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import {
  ChildOrganisationParams,
  CommonParams,
  Key,
  OemParams,
  RetentionDays,
  StringEnum,
} from '../core/http/schema.ts';

export const Metric = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'metric name; dots address nested values' }),
    data_type: StringEnum(['number', 'string', 'boolean'], { default: 'number' }),
    unit: Type.Optional(Type.String({ maxLength: 50, default: '' })),
  },
  { additionalProperties: false },
);

export const ThingTemplate = Type.Object({
  thing_template_key: Type.String(),
  name: Type.String(),
  description: Type.String(),
  metrics: Type.Array(Metric),
  heartbeat_interval: Type.Integer({
    description: 'seconds; a thing is alive while it was heard from within twice this',
  }),
  idle_timeout: Type.Integer({ description: 'seconds without events that count as idle time in aggregations' }),
  retention_days: Type.Union([Type.Integer(), Type.Null()], {
    description: "days its things' events are kept; null: the organisation's retention_days",
  }),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
});

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 2000 }),
  metrics: Type.Array(Metric, { maxItems: 1000 }),
  heartbeat_interval: Type.Integer({ minimum: 1, maximum: 31_536_000 }),
  idle_timeout: Type.Integer({ minimum: 1, maximum: 31_536_000 }),
  retention_days: RetentionDays(
    "days its things' events are kept, 1 to 36500; null: the organisation's; set by an account admin only",
  ),
};

export const TemplateInput = Type.Object(
  {
    name: fields.name,
    description: Type.Optional(fields.description),
    metrics: Type.Optional(fields.metrics),
    heartbeat_interval: Type.Optional({ ...fields.heartbeat_interval, default: 60 }),
    idle_timeout: Type.Optional({ ...fields.idle_timeout, default: 300 }),
    retention_days: Type.Optional(fields.retention_days),
  },
  { additionalProperties: false },
);

export const TemplateChanges = Type.Object(
  {
    name: Type.Optional(fields.name),
    description: Type.Optional(fields.description),
    metrics: Type.Optional(fields.metrics),
    heartbeat_interval: Type.Optional(fields.heartbeat_interval),
    idle_timeout: Type.Optional(fields.idle_timeout),
    retention_days: Type.Optional(fields.retention_days),
  },
  { additionalProperties: false },
);

export const TEMPLATE_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'thing_template_key'],
  searchDescription: 'keywords matched against thing_template_key, name and description',
};

export const ListTemplatesParams = Type.Object({ ...CommonParams, ...OemParams, ...listParams(TEMPLATE_LIST) });
export const TemplateKeyParams = Type.Object({ ...CommonParams, ...OemParams, thing_template_key: Key() });
export const CreateTemplateParams = Type.Object({
  ...CommonParams,
  ...ChildOrganisationParams,
  thing_template: TemplateInput,
});
export const UpdateTemplateParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_template_key: Key(),
  thing_template: TemplateChanges,
});

export const TemplateList = ListResponse('thing_templates', ThingTemplate);
export const TemplateOne = OneResponse('thing_template', ThingTemplate);
