import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { ChildOrganisationParams, CommonParams, Key, Nullable, OemParams } from '../core/http/schema.ts';

export const ApiKey = Type.Object({
  api_key_key: Type.String(),
  name: Type.String(),
  role_key: Type.String({ description: "what requests with the key may do; by default the creator's role" }),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  expires_at: Type.Union([Type.Integer(), Type.String(), Type.Null()], { description: 'null: it does not expire' }),
  last_used_at: Type.Union([Type.Integer(), Type.String(), Type.Null()]),
  token: Type.Optional(
    Type.String({ description: 'only in the answer to the create request: send it as X-Auth-Token; not shown again' }),
  ),
});

export const ApiKeyInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    role_key: Type.Optional(Key()),
    expires_at: Type.Optional(
      Nullable(
        // The last instant a date can name (year 275760): past it no answer could show it.
        Type.Integer({
          minimum: 1,
          maximum: 8_640_000_000_000,
          description: 'epoch seconds, in the future; none: it does not expire',
        }),
      ),
    ),
  },
  { additionalProperties: false },
);

export const API_KEY_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'name'],
  searchDescription: 'keywords matched against name',
};

export const ListApiKeysParams = Type.Object({ ...CommonParams, ...OemParams, ...listParams(API_KEY_LIST) });
export const ApiKeyKeyParams = Type.Object({ ...CommonParams, ...OemParams, api_key_key: Key() });
export const CreateApiKeyParams = Type.Object({ ...CommonParams, ...ChildOrganisationParams, api_key: ApiKeyInput });

export const ApiKeyList = ListResponse('api_keys', ApiKey);
export const ApiKeyOne = OneResponse('api_key', ApiKey);
