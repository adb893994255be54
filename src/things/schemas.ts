import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { namedPattern } from '../core/http/pattern-messages.ts';
import { ChildOrganisationParams, CommonParams, Key, OemParams, TagsInput } from '../core/http/schema.ts';
import { CLIENT_KEY_PATTERN } from '../core/keys.ts';

const Timestamp = Type.Union([Type.Integer(), Type.String()]);

/** The Thing object, as listed, read, and embedded in alerts and audit trails (docs/api.md, "Things"). */
export const Thing = Type.Object({
  bi_directional: Type.Boolean(),
  coordinates: Type.Union([Type.Array(Type.Union([Type.Number(), Type.String()])), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  description: Type.String(),
  name: Type.String(),
  state: Type.Null(),
  tags_array: Type.Array(Type.String()),
  tags: Type.String({ description: 'comma-joined tags' }),
  thing_key: Type.String(),
  user_defined_properties: Type.Record(Type.String(), Type.String()),
  alive: Type.Boolean({ description: 'heard from within twice the template heartbeat_interval' }),
  last_event: Type.Union([
    Type.Object({ timestamp: Timestamp, data: Type.Object({}, { additionalProperties: true }) }),
    Type.Null(),
  ]),
  last_beat: Type.Union([Timestamp, Type.Null()]),
  thing_template_name: Type.String(),
  thing_template_key: Type.String(),
});

const Coordinates = Type.Unsafe<(number | string)[] | null>({
  type: ['array', 'null'],
  items: { type: ['number', 'string'], pattern: namedPattern('^-?\\d+(\\.\\d+)?$', 'must be a number (12.5, -3)') },
  minItems: 2,
  maxItems: 2,
  description: '[latitude, longitude] as numbers or numeric text',
});

/** Name to value; a type list (not a union) so that null stays null instead of being coerced to "". */
export const PropertyValues = Type.Record(
  Type.String({ minLength: 1, maxLength: 200 }),
  Type.Unsafe<string | number | boolean | null>({ type: ['string', 'number', 'boolean', 'null'], maxLength: 10_000 }),
  {
    description: 'name to value; values are kept as text; null removes a property',
    // `__proto__` names no property a JSON object can be given in JavaScript: refused, not dropped.
    propertyNames: {
      minLength: 1,
      maxLength: 200,
      pattern: namedPattern('^(?!__proto__$)', 'may not name a property __proto__'),
    },
  },
);

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 2000 }),
};

export const ThingInput = Type.Object(
  {
    thing_key: Type.Optional(
      Type.String({ pattern: CLIENT_KEY_PATTERN, description: 'chosen by the client; generated when absent' }),
    ),
    name: fields.name,
    thing_template_key: Key(),
    description: Type.Optional(fields.description),
    tags: Type.Optional(TagsInput),
    coordinates: Type.Optional(Coordinates),
    bi_directional: Type.Optional(Type.Boolean()),
    user_defined_properties: Type.Optional(PropertyValues),
  },
  { additionalProperties: false },
);

export const ThingChanges = Type.Object(
  {
    name: Type.Optional(fields.name),
    thing_template_key: Type.Optional(Key()),
    description: Type.Optional(fields.description),
    tags: Type.Optional(TagsInput),
    coordinates: Type.Optional(Coordinates),
    bi_directional: Type.Optional(Type.Boolean()),
    user_defined_properties: Type.Optional(PropertyValues),
  },
  { additionalProperties: false },
);

export const THING_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'thing_key'],
  searchDescription: 'keywords matched against thing_key, name, description and tags',
};

export const ThingFilters = {
  thing_template_key: Type.Optional(Key('only things of this template')),
  group_key: Type.Optional(Key('only members of this group')),
  bi_directional: Type.Optional(Type.Boolean()),
  alive: Type.Optional(
    Type.Boolean({ description: "only things alive now (true) or not (false), as each one's alive says" }),
  ),
};

/**
 * The things' filter a list's parameters ask for (ThingFilters but the group), `alive` judged at `now`:
 * the time the answer's `alive` is judged at too, so that a thing listed as alive says so.
 */
export const thingFilterOf = (
  params: {
    thing_template_key?: string | undefined;
    bi_directional?: boolean | undefined;
    alive?: boolean | undefined;
  },
  now: number,
) => ({ thingTemplateKey: params.thing_template_key, biDirectional: params.bi_directional, alive: params.alive, now });

export const ListThingsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(THING_LIST),
  ...ThingFilters,
});
export const ThingKeyParams = Type.Object({ ...CommonParams, ...OemParams, thing_key: Key() });
export const CreateThingParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, thing: ThingInput });
export const UpdateThingParams = Type.Object({ ...CommonParams, ...OemParams, thing_key: Key(), thing: ThingChanges });
export const SetPropertiesParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_key: Key(),
  user_defined_properties: PropertyValues,
});
export const SetTraitsParams = Type.Object({ ...CommonParams, ...OemParams, thing_key: Key(), traits: PropertyValues });

export const ThingList = ListResponse('things', Thing);
export const ThingOne = OneResponse('thing', Thing);

/**
 * The most rows one import may hold: 10,000 things take a few seconds (docs/benchmarks.md, "import").
 * A JSON body of more is refused by validation, a CSV body as soon as its parsing passes the limit.
 */
export const IMPORT_MAX_ROWS = 20_000;

export const ImportThingsParams = Type.Object({
  ...CommonParams,
  ...ChildOrganisationParams,
  things: Type.Optional(
    Type.Array(Type.Unknown(), {
      maxItems: IMPORT_MAX_ROWS,
      description: 'the Thing objects to import, as POST /api/v3/things takes them; with a JSON body',
    }),
  ),
  mode: Type.Optional(
    Type.Union([Type.Literal('create'), Type.Literal('upsert')], {
      default: 'create',
      description: 'create: an existing key is a row error; upsert: an existing thing is updated',
    }),
  ),
  dry_run: Type.Optional(Type.Boolean({ default: false, description: 'check every row and count, but write nothing' })),
  atomic: Type.Optional(Type.Boolean({ default: false, description: 'write nothing when any row fails' })),
});

export const ImportAnswer = Type.Object({
  created: Type.Integer(),
  updated: Type.Integer(),
  failed: Type.Array(
    Type.Object({
      row: Type.Integer({ description: 'the data row, from 1 (a CSV header is not a row)' }),
      errors: Type.Array(
        Type.Object({ code: Type.String(), message: Type.String(), param: Type.Optional(Type.String()) }),
      ),
    }),
  ),
});
