import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission, type RouteCall } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentUser } from './presenter.ts';
import {
  CreateUserParams,
  ListUsersParams,
  UpdateUserParams,
  USER_LIST,
  UserKeyParams,
  UserList,
  UserOne,
} from './schemas.ts';
import { createUser, deleteUser, listUsers, requireUser, type UserWrite, updateUser } from './service.ts';

const tags = ['Users'];

export function userRoutes(store: Store, passwordCost: number): AnyRoute[] {
  const write = (call: RouteCall<unknown>): UserWrite => ({
    store,
    actor: actorOf(call.principal),
    passwordCost,
    grantor: call.principal,
  });
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/users',
      tags,
      summary: 'List users',
      access: permission('user', 'read'),
      params: ListUsersParams,
      response: UserList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const { total, rows } = await listUsers(store.db, await visibleOrganisations(), toListQuery(params, USER_LIST));
        return listAnswer(
          'users',
          total,
          pageEcho,
          rows.map((r) => presentUser(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/users/:user_key',
      tags,
      summary: 'Get a user',
      access: permission('user', 'read'),
      params: UserKeyParams,
      response: UserOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        user: presentUser(await requireUser(store.db, await visibleOrganisations(), params.user_key), time),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/users',
      tags,
      summary: 'Create a user',
      description:
        'E-mail addresses are unique across the server. With is_oem and child_organisation_key the user is created in that child organisation.',
      access: permission('user', 'create'),
      params: CreateUserParams,
      response: UserOne,
      handler: async (call) => {
        const row = await createUser(write(call), await call.targetOrganisation(), call.params.user);
        return { user: presentUser(row, call.time) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/users/:user_key',
      tags,
      summary: 'Update a user',
      description: 'A new password signs the user out of every session.',
      access: permission('user', 'update'),
      params: UpdateUserParams,
      response: UserOne,
      handler: async (call) => {
        const row = await updateUser(
          write(call),
          await call.visibleOrganisations(),
          call.params.user_key,
          call.params.user,
        );
        return { user: presentUser(row, call.time) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/users/:user_key',
      tags,
      summary: 'Delete a user',
      access: permission('user', 'delete'),
      params: UserKeyParams,
      handler: async (call) => {
        await deleteUser(write(call), await call.visibleOrganisations(), call.params.user_key);
        return {};
      },
    }),
  ];
}
