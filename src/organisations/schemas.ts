import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { CommonParams, Key } from '../core/http/schema.ts';

export const Organisation = Type.Object({
  organisation_key: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  is_oem: Type.Boolean(),
  parent_organisation_key: Type.Union([Type.String(), Type.Null()]),
  license: Type.Object({ license_key: Type.String() }),
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
    { name: Type.Optional(OrganisationName), is_oem: Type.Optional(Type.Boolean()) },
    { additionalProperties: false },
  ),
});

export const OrganisationList = ListResponse('organisations', Organisation);
export const OrganisationOne = OneResponse('organisation', Organisation);
