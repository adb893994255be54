import { actorOf } from '../audit/recorder.ts';
import { invalidParam } from '../core/errors.ts';
import { listAnswer, pickFields, requestedFields, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentThing } from '../things/presenter.ts';
import { THING_LIST, ThingList, thingFilterOf } from '../things/schemas.ts';
import { presentGroup } from './presenter.ts';
import {
  CreateGroupParams,
  GROUP_FIELDS,
  GROUP_LIST,
  GroupKeyParams,
  GroupList,
  GroupOne,
  ListGroupsParams,
  ListGroupThingsParams,
  MEMBER_COUNTS_MAX,
  MemberCounts,
  MemberCountsParams,
  UpdateGroupParams,
} from './schemas.ts';
import {
  countMembersOfGroups,
  createGroup,
  deleteGroup,
  listGroups,
  listThingsOfGroup,
  requireGroup,
  updateGroup,
} from './service.ts';

const tags = ['Groups'];

export function groupRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/groups',
      tags,
      summary: 'List groups',
      access: permission('group', 'read'),
      params: ListGroupsParams,
      response: GroupList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const fields = requestedFields(params, GROUP_FIELDS);
        const { total, rows } = await listGroups(
          store.db,
          await visibleOrganisations(),
          toListQuery(params, GROUP_LIST),
        );
        return listAnswer(
          'groups',
          total,
          pageEcho,
          rows.map((r) => pickFields(presentGroup(r, time), fields, 'group_key')),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/groups/:group_key',
      tags,
      summary: 'Get a group',
      access: permission('group', 'read'),
      params: GroupKeyParams,
      response: GroupOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        group: presentGroup(await requireGroup(store.db, await visibleOrganisations(), params.group_key), time),
      }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/groups/:group_key/things',
      tags,
      summary: 'List the things of a group',
      description: 'For a dynamic group the expression is evaluated at every read.',
      access: permission('group', 'read'),
      params: ListGroupThingsParams,
      response: ThingList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const now = Date.now();
        const { total, rows } = await listThingsOfGroup(
          store.db,
          await visibleOrganisations(),
          params.group_key,
          thingFilterOf(params, now),
          toListQuery(params, THING_LIST),
        );
        return listAnswer(
          'things',
          total,
          pageEcho,
          rows.map((r) => presentThing(r, time, now)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/group_member_counts',
      tags,
      summary: 'Count the things of several groups',
      description: `The total of GET /api/v3/groups/:group_key/things for each of up to ${MEMBER_COUNTS_MAX} groups, in one request.`,
      access: permission('group', 'read'),
      params: MemberCountsParams,
      response: MemberCounts,
      handler: async ({ params, visibleOrganisations }) => {
        const groupKeys = [...new Set(params.group_keys.split(',').map((key) => key.trim()))];
        if (groupKeys.length > MEMBER_COUNTS_MAX || groupKeys.includes('')) {
          throw invalidParam('group_keys', `must name from 1 to ${MEMBER_COUNTS_MAX} groups, comma-separated`);
        }
        return { member_counts: await countMembersOfGroups(store.db, await visibleOrganisations(), groupKeys) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/groups',
      tags,
      summary: 'Create a group',
      description: 'group_type 1 (static) takes thing_keys; group_type 2 (dynamic) takes thing_expression.',
      access: permission('group', 'create'),
      params: CreateGroupParams,
      response: GroupOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        const row = await createGroup(store, actorOf(principal), await targetOrganisation(), params.group);
        return { group: presentGroup(row, time) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/groups/:group_key',
      tags,
      summary: 'Update a group',
      description: 'thing_keys, when given, replaces the members of a static group.',
      access: permission('group', 'update'),
      params: UpdateGroupParams,
      response: GroupOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const row = await updateGroup(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.group_key,
          params.group,
        );
        return { group: presentGroup(row, time) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/groups/:group_key',
      tags,
      summary: 'Delete a group',
      access: permission('group', 'delete'),
      params: GroupKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteGroup(store, actorOf(principal), await visibleOrganisations(), params.group_key);
        return {};
      },
    }),
  ];
}
