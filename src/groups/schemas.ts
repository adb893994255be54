import { Type } from '@sinclair/typebox';
import { fieldListParams, ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import {
  ChildOrganisationParams,
  CommonParams,
  Key,
  Nullable,
  OemParams,
  StringEnum,
  TagsInput,
} from '../core/http/schema.ts';
import { THING_LIST, ThingFilters } from '../things/schemas.ts';

export const GROUP_FIELDS = [
  'group_key',
  'name',
  'description',
  'group_type',
  'scope',
  'thing_expression',
  'tags',
  'created_at',
  'updated_at',
] as const;

export const Group = Type.Object({
  group_key: Type.String(),
  name: Type.String(),
  description: Type.String(),
  group_type: Type.Integer({ description: '1 = static (thing_keys), 2 = dynamic (thing_expression)' }),
  scope: Type.String({ description: 'all or any; stored and returned, it does not change membership' }),
  thing_expression: Type.Union([Type.String(), Type.Null()]),
  tags: Type.String({ description: 'comma-joined tags' }),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
});

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 2000 }),
  group_type: Type.Integer({ enum: [1, 2], description: '1 = static, 2 = dynamic' }),
  tags: TagsInput,
  scope: StringEnum(['all', 'any']),
  thing_keys: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
    maxItems: 10_000,
    description: 'members of a static group',
  }),
  thing_expression: Nullable(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'membership rule of a dynamic group (docs/expressions.md)',
    }),
  ),
};

export const GroupInput = Type.Object(
  {
    name: fields.name,
    description: Type.Optional(fields.description),
    group_type: fields.group_type,
    tags: Type.Optional(fields.tags),
    scope: Type.Optional(fields.scope),
    thing_keys: Type.Optional(fields.thing_keys),
    thing_expression: Type.Optional(fields.thing_expression),
  },
  { additionalProperties: false },
);

export const GroupChanges = Type.Object(
  {
    name: Type.Optional(fields.name),
    description: Type.Optional(fields.description),
    group_type: Type.Optional(fields.group_type),
    tags: Type.Optional(fields.tags),
    scope: Type.Optional(fields.scope),
    thing_keys: Type.Optional(fields.thing_keys),
    thing_expression: Type.Optional(fields.thing_expression),
  },
  { additionalProperties: false },
);

export const GROUP_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'group_key'],
  searchDescription: 'keywords matched against group_key, name and tags',
};

export const ListGroupsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(GROUP_LIST),
  ...fieldListParams(GROUP_FIELDS),
});
export const GroupKeyParams = Type.Object({ ...CommonParams, ...OemParams, group_key: Key() });
export const CreateGroupParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, group: GroupInput });
export const UpdateGroupParams = Type.Object({ ...CommonParams, ...OemParams, group_key: Key(), group: GroupChanges });
export const ListGroupThingsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(THING_LIST),
  thing_template_key: ThingFilters.thing_template_key,
  bi_directional: ThingFilters.bi_directional,
  alive: ThingFilters.alive,
  group_key: Key(),
});

/** The most groups one `GET /api/v3/group_member_counts` counts (a page of the console's list is 50). */
export const MEMBER_COUNTS_MAX = 100;
export const MemberCountsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  group_keys: Type.String({
    minLength: 1,
    description: `comma-separated group keys, at most ${MEMBER_COUNTS_MAX}`,
  }),
});
export const MemberCounts = Type.Object({
  member_counts: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
    description: 'each group key asked for, with the number of things the group holds now',
  }),
});

export const GroupList = ListResponse('groups', Group);
export const GroupOne = OneResponse('group', Group);
