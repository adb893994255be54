import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { ChildOrganisationParams, CommonParams, Key, Nullable, OemParams, StringEnum } from '../core/http/schema.ts';

export const Rule = Type.Object({
  rule_key: Type.String(),
  name: Type.String(),
  description: Type.String(),
  thing_template_key: Nullable(Type.String()),
  thing_keys: Type.Array(Type.String()),
  group_key: Nullable(Type.String()),
  condition: Type.String({ description: 'expression over the event metrics and thing.<field> (docs/expressions.md)' }),
  alert_type: Nullable(Type.Integer({ description: '0 Info, 1 Warning, 2 Error, 3 Critical; null: no alert' })),
  alert_message: Type.String(),
  trigger: Type.String({ description: 'on_enter, every_event or no_data' }),
  enabled: Type.Boolean(),
  for_seconds: Type.Integer({ description: 'on_enter: how long the condition must hold; no_data: the silence' }),
  auto_clear: Type.Boolean({ description: 'one open alert per thing, cleared when the condition no longer holds' }),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
});

/** The longest `for_seconds`: 30 days (docs/rules.md, "Rule timing"). */
export const MAX_FOR_SECONDS = 2_592_000;

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 2000 }),
  thing_template_key: Nullable(Key('watch the things of this template')),
  thing_keys: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    maxItems: 10_000,
    description: 'watch these things',
  }),
  group_key: Nullable(Key('watch the things of this group')),
  condition: Type.String({
    minLength: 1,
    maxLength: 4096,
    description: 'e.g. temperature > 80; required unless trigger is no_data',
  }),
  alert_type: Nullable(
    Type.Integer({ enum: [0, 1, 2, 3], description: '0 Info, 1 Warning, 2 Error, 3 Critical; null: no alert' }),
  ),
  alert_message: Type.String({
    maxLength: 2000,
    description: '{{metric}}, {{thing.name}} and {{thing.thing_key}} are replaced',
  }),
  trigger: StringEnum(['on_enter', 'every_event', 'no_data'], {
    description:
      'on_enter: when the condition turns true for a thing (and has held for_seconds); every_event: on every matching event; no_data: when a thing has sent nothing for for_seconds',
  }),
  enabled: Type.Boolean(),
  for_seconds: Type.Integer({
    minimum: 0,
    maximum: MAX_FOR_SECONDS,
    description: `on_enter: seconds (by event time) the condition must hold before the rule fires; no_data (required, at least 1): seconds of silence. At most ${MAX_FOR_SECONDS} (30 days)`,
  }),
  auto_clear: Type.Boolean({
    description:
      'keep one open alert per thing, raise no other and send no actions while it is open or acknowledged, and clear it at the first event on which the condition no longer holds (no_data: the first event)',
  }),
};

export const RuleInput = Type.Object(
  {
    name: fields.name,
    description: Type.Optional(fields.description),
    thing_template_key: Type.Optional(fields.thing_template_key),
    thing_keys: Type.Optional(fields.thing_keys),
    group_key: Type.Optional(fields.group_key),
    condition: Type.Optional(fields.condition),
    alert_type: Type.Optional(fields.alert_type),
    alert_message: Type.Optional(fields.alert_message),
    trigger: Type.Optional(fields.trigger),
    enabled: Type.Optional(fields.enabled),
    for_seconds: Type.Optional(fields.for_seconds),
    auto_clear: Type.Optional(fields.auto_clear),
  },
  { additionalProperties: false },
);

export const RuleChanges = Type.Partial(RuleInput, { additionalProperties: false });

export const RULE_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'rule_key'],
  searchDescription: 'keywords matched against rule_key, name and description',
};

export const ListRulesParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(RULE_LIST),
  thing_template_key: Type.Optional(Key('only rules watching this template')),
  group_key: Type.Optional(Key('only rules watching this group')),
  enabled: Type.Optional(Type.Boolean()),
});
export const RuleKeyParams = Type.Object({ ...CommonParams, ...OemParams, rule_key: Key() });
export const CreateRuleParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, rule: RuleInput });
export const UpdateRuleParams = Type.Object({ ...CommonParams, ...OemParams, rule_key: Key(), rule: RuleChanges });

export const RuleList = ListResponse('rules', Rule);
export const RuleOne = OneResponse('rule', Rule);
