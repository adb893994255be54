import { Type } from '@sinclair/typebox';
import { CommonParams } from '../core/http/schema.ts';

export const Session = Type.Object({
  success: Type.Boolean(),
  auth_token: Type.String({ description: 'send it as X-Auth-Token on every other request' }),
  email: Type.String(),
  role: Type.String({ description: 'name of the role the session acts with' }),
  time_zone: Type.String(),
  organisation: Type.Object({
    name: Type.Union([Type.String(), Type.Null()]),
    organisation_key: Type.String(),
    license: Type.Object({ license_key: Type.String() }),
  }),
});

export const SignInParams = Type.Object({
  ...CommonParams,
  email: Type.String({ minLength: 1, maxLength: 254 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  organisation_key: Type.Optional(
    Type.String({ minLength: 1, description: 'an OEM admin signs in to this child organisation as its admin' }),
  ),
});

export const IdentityProviderSignInParams = Type.Object({
  ...CommonParams,
  client_id: Type.String({ minLength: 1, maxLength: 254, description: 'the user name at the identity provider' }),
  code: Type.String({ minLength: 1, maxLength: 1024, description: "the user's password at the identity provider" }),
  mode: Type.Optional(Type.String({ minLength: 1, default: 'azure', description: 'name of the configured provider' })),
});

export const SignOutParams = Type.Object({ ...CommonParams });
export const SignOutAnswer = Type.Object({ success: Type.Boolean(), message: Type.String() });

const OperationName = Type.Union(['read', 'create', 'update', 'delete'].map((o) => Type.Literal(o)));

/** The caller as the API sees it: who, in which organisation, and what its role lets it do. */
export const CallerAnswer = Type.Object({
  caller: Type.Object({
    user_key: Type.Union([Type.String(), Type.Null()]),
    email: Type.Union([Type.String(), Type.Null()]),
    role_key: Type.String(),
    role: Type.String({ description: "the role's name" }),
    account_admin: Type.Boolean(),
    abilities: Type.Array(Type.Integer(), { description: "the role's abilities, as the role holds them" }),
    allowed: Type.Record(Type.String(), Type.Array(OperationName), {
      description:
        'per permission class, the operations the role grants, with `all` (as a class or an operation) ' +
        'spelled out; a class the role grants nothing on is absent',
    }),
    organisation_key: Type.String(),
    is_oem: Type.Boolean(),
    time_zone: Type.String(),
  }),
});

export const CallerParams = Type.Object({ ...CommonParams });
