import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { CommonParams, Key, RetentionDays } from '../core/http/schema.ts';

export const Organisation = Type.Object({
  organisation_key: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  is_oem: Type.Boolean(),
  parent_organisation_key: Type.Union([Type.String(), Type.Null()]),
  license: Type.Object({ license_key: Type.String() }),
  retention_days: Type.Union([Type.Integer(), Type.Null()], {
    description: 'days events are kept; null: for ever (docs/storage.md)',
  }),
  rollup_retention_days: Type.Union([Type.Integer(), Type.Null()], {
    description: '15-minute rollups are kept this many days, and at least as long as the events; null: for ever',
  }),
  events_per_second: Type.Union([Type.Integer(), Type.Null()], {
    description:
      "events a second the organisation's devices and users may send, beyond which 429 (docs/operations.md); null: the server's default; 0: no limit",
  }),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
});

const OrganisationName = Type.String({ minLength: 1, maxLength: 200 });

export const ORGANISATION_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'organisation_key'],
  searchDescription: 'keywords matched against organisation_key and name',
};

export const ListOrganisationsParams = Type.Object({ ...CommonParams, ...listParams(ORGANISATION_LIST) });
export const OrganisationKeyParams = Type.Object({ ...CommonParams, organisation_key: Key() });
export const CreateOrganisationParams = Type.Object({
  ...CommonParams,
  organisation: Type.Object(
    { name: OrganisationName, is_oem: Type.Optional(Type.Boolean({ default: false })) },
    { additionalProperties: false },
  ),
});
export const UpdateOrganisationParams = Type.Object({
  ...CommonParams,
  organisation_key: Key(),
  organisation: Type.Object(
    {
      name: Type.Optional(OrganisationName),
      is_oem: Type.Optional(Type.Boolean({ description: 'a child organisation only; set by its parent' })),
      retention_days: Type.Optional(RetentionDays('days events are kept; null: for ever')),
      rollup_retention_days: Type.Optional(
        RetentionDays('days 15-minute rollups are kept (at least as long as the events); null: for ever'),
      ),
      // One type list, not a union: with a union the validator's type coercion turns null into 0.
      events_per_second: Type.Optional(
        Type.Unsafe<number | null>({
          type: ['integer', 'null'],
          minimum: 0,
          maximum: 10_000_000,
          description:
            "a child organisation only, set by its parent: events a second it may send; null: the server's default; 0: no limit",
        }),
      ),
    },
    { additionalProperties: false },
  ),
});

export const OrganisationList = ListResponse('organisations', Organisation);
export const OrganisationOne = OneResponse('organisation', Organisation);
