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
