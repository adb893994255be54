import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { namedPattern } from '../core/http/pattern-messages.ts';
import { ChildOrganisationParams, CommonParams, Key, OemParams } from '../core/http/schema.ts';

export const User = Type.Object({
  user_key: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role_key: Type.String(),
  time_zone: Type.String(),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
});

const Email = Type.String({
  minLength: 3,
  maxLength: 254,
  pattern: namedPattern('^[^\\s@]+@[^\\s@]+$', 'must be an e-mail address, such as ops@example.com'),
});
const Password = Type.String({ minLength: 8, maxLength: 256, description: 'never returned' });
const UserName = Type.String({ maxLength: 200 });
const TimeZone = Type.String({ minLength: 1, maxLength: 100, description: 'IANA or Rails-style name' });

export const UserInput = Type.Object(
  {
    email: Email,
    password: Password,
    role_key: Key(),
    name: Type.Optional(UserName),
    time_zone: Type.Optional(TimeZone),
  },
  { additionalProperties: false },
);
export const UserChanges = Type.Object(
  {
    email: Type.Optional(Email),
    password: Type.Optional(Password),
    role_key: Type.Optional(Key()),
    name: Type.Optional(UserName),
    time_zone: Type.Optional(TimeZone),
  },
  { additionalProperties: false },
);

export const USER_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'email', 'name'],
  searchDescription: 'keywords matched against email and name',
};

export const ListUsersParams = Type.Object({ ...CommonParams, ...OemParams, ...listParams(USER_LIST) });
export const UserKeyParams = Type.Object({ ...CommonParams, ...OemParams, user_key: Key() });
export const CreateUserParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, user: UserInput });
export const UpdateUserParams = Type.Object({ ...CommonParams, ...OemParams, user_key: Key(), user: UserChanges });

export const UserList = ListResponse('users', User);
export const UserOne = OneResponse('user', User);
