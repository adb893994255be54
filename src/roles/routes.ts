import { actorOf } from '../audit/recorder.ts';
import { ApiError } from '../core/errors.ts';
import { listAnswer, pickFields, requestedFields, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentRole } from './presenter.ts';
import {
  CreateRoleParams,
  ListRolesParams,
  ROLE_FIELDS,
  ROLE_LIST,
  RoleKeyParams,
  RoleList,
  RoleOne,
  UpdateRoleParams,
} from './schemas.ts';
import { createRole, deleteRole, listRoles, requireRole, updateRole } from './service.ts';

const tags = ['Roles'];

export function roleRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/roles',
      tags,
      summary: 'List roles',
      access: permission('role', 'read'),
      params: ListRolesParams,
      response: RoleList,
      cachedUntilChangeOf: 'Role',
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const fields = requestedFields(params, ROLE_FIELDS);
        const { total, rows } = await listRoles(store.db, await visibleOrganisations(), toListQuery(params, ROLE_LIST));
        const items = rows.map((row) => pickFields(presentRole(row, time), fields, 'role_key'));
        return listAnswer('roles', total, pageEcho, items);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/roles/:role_key',
      tags,
      summary: 'Get a role',
      access: permission('role', 'read'),
      params: RoleKeyParams,
      response: RoleOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        role: presentRole(await requireRole(store.db, await visibleOrganisations(), params.role_key), time),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/roles',
      tags,
      summary: 'Create a role',
      description: 'With is_oem, child_organisation_key names the child organisation the role is created in.',
      access: permission('role', 'create'),
      params: CreateRoleParams,
      response: RoleOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        // Required whenever is_oem is given, false included, as the interface has it.
        if (params.is_oem !== undefined && params.child_organisation_key === undefined) {
          throw new ApiError(400, [
            { code: 'required', param: 'child_organisation_key', message: 'is required when is_oem is given' },
          ]);
        }
        const row = await createRole(store, actorOf(principal), await targetOrganisation(), params.role, principal);
        return { role: presentRole(row, time, { timestamps: false }) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/roles/:role_key',
      tags,
      summary: 'Update a role',
      access: permission('role', 'update'),
      params: UpdateRoleParams,
      response: RoleOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const row = await updateRole(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.role_key,
          params.role,
          principal,
        );
        return { role: presentRole(row, time, { timestamps: false }) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/roles/:role_key',
      tags,
      summary: 'Delete a role',
      description: 'A role that users or key pairs still hold cannot be deleted (409); built-in roles never (403).',
      access: permission('role', 'delete'),
      params: RoleKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteRole(store, actorOf(principal), await visibleOrganisations(), params.role_key);
        return {};
      },
    }),
  ];
}
