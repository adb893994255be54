/**
 * Schema building blocks shared by every route. One TypeBox schema per endpoint drives validation,
 * the OpenAPI document and the handler's TypeScript types.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** A value that may also be null. Written as a JSON Schema type list, so coercion keeps null as null. */
export const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [schema.type, 'null'],
    ...(schema.enum ? { enum: [...schema.enum, null] } : {}),
  });

/** A string limited to a fixed set of values (one `enum`, so errors list the allowed values). */
export const StringEnum = <T extends string[]>(
  values: [...T],
  options: { description?: string; default?: T[number] } = {},
) => Type.Unsafe<T[number]>({ type: 'string', enum: values, ...options });

/**
 * Tags: an array of strings or one comma-joined string. Written as a type list rather than a union:
 * coercion inside a union would turn a string into a one-item array before the string branch is tried.
 */
export const TagsInput = Type.Unsafe<string[] | string>({
  type: ['array', 'string'],
  items: { type: 'string', maxLength: 200 },
  maxItems: 200,
  maxLength: 10_000,
  description: 'an array of tags or one comma-joined string',
});

/** A resource key in a path or a reference. */
export const Key = (description?: string) =>
  Type.String({ minLength: 1, maxLength: 64, ...(description ? { description } : {}) });

/** The most days data may be kept for (a hundred years): more is refused, naming this. */
export const MAX_RETENTION_DAYS = 36_500;

/** Days some data is kept: a whole number from 1 to MAX_RETENTION_DAYS, or null for ever. */
export const RetentionDays = (description: string) =>
  Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 1, maximum: MAX_RETENTION_DAYS, description });

/** Parameters every endpoint accepts (docs/api.md, "Requests"). */
export const CommonParams = {
  pretty: Type.Optional(Type.Boolean({ default: false, description: 'indent the JSON answer with two spaces' })),
  timestamp_format: Type.Optional(
    StringEnum(['int', 'str'], {
      description: 'int = epoch seconds (default); str = yyyy/mm/dd hh:mm:ss in the time zone',
    }),
  ),
  time_format: Type.Optional(StringEnum(['int', 'str'], { description: 'synonym of timestamp_format' })),
  time_zone: Type.Optional(
    Type.String({
      minLength: 1,
      description: 'IANA (Asia/Kolkata) or Rails-style (Mumbai) zone name; default the user zone',
    }),
  ),
};

export const OemParams = {
  is_oem: Type.Optional(Type.Boolean({ description: 'include or act on child organisations of an OEM organisation' })),
};

export const ChildOrganisationParams = {
  ...OemParams,
  child_organisation_key: Type.Optional(Key('create the resource in this child organisation')),
};

/** Answer of a delete. */
export const EmptyObject = Type.Object({});
