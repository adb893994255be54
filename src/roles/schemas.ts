import { Type } from '@sinclair/typebox';
import { fieldListParams, ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { ChildOrganisationParams, CommonParams, Key, OemParams } from '../core/http/schema.ts';

export const ROLE_FIELDS = [
  'role_key',
  'name',
  'abilities',
  'account_admin',
  'permissions',
  'created_at',
  'updated_at',
] as const;

export const Permission = Type.Object({
  class: Type.String({
    description: 'thing, thing_template, rule, instruction, group, role, user, gateway, alert, ...',
  }),
  operation: Type.String({ description: 'read, create, update, delete or all' }),
  seqno: Type.Integer({ description: 'read 1, create 2, update 3, delete 4, all 5' }),
});

export const Role = Type.Object({
  role_key: Type.String(),
  name: Type.String(),
  abilities: Type.Array(Type.Integer(), { description: 'class * 10 + seqno, e.g. 11 = read things, 995 = everything' }),
  account_admin: Type.Boolean(),
  permissions: Type.Array(Permission),
  created_at: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
  updated_at: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
});

const Abilities = Type.Array(Type.Integer(), { maxItems: 200 });
const RoleName = Type.String({ minLength: 1, maxLength: 200 });

export const RoleInput = Type.Object({ name: RoleName, abilities: Abilities }, { additionalProperties: false });
export const RoleChanges = Type.Object(
  { name: Type.Optional(RoleName), abilities: Type.Optional(Abilities) },
  { additionalProperties: false },
);

export const ROLE_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'role_key'],
  searchDescription: 'keywords matched against role_key and name',
};

export const ListRolesParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(ROLE_LIST),
  ...fieldListParams(ROLE_FIELDS, { deprecatedFields: true }),
});
export const RoleKeyParams = Type.Object({ ...CommonParams, ...OemParams, role_key: Key() });
export const CreateRoleParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, role: RoleInput });
export const UpdateRoleParams = Type.Object({ ...CommonParams, ...OemParams, role_key: Key(), role: RoleChanges });

export const RoleList = ListResponse('roles', Role);
export const RoleOne = OneResponse('role', Role);
