import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentDashboard } from './presenter.ts';
import {
  CreateDashboardParams,
  DASHBOARD_LIST,
  DashboardKeyParams,
  DashboardList,
  DashboardOne,
  ImportDashboardParams,
  ListDashboardsParams,
  UpdateDashboardParams,
} from './schemas.ts';
import {
  createDashboard,
  deleteDashboard,
  importDashboard,
  listDashboards,
  requireDashboard,
  updateDashboard,
} from './service.ts';

const tags = ['Dashboards'];

export function dashboardRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/dashboards',
      arrayIndexes: 'brackets',
      tags,
      summary: 'List dashboards',
      access: permission('dashboard', 'read'),
      params: ListDashboardsParams,
      response: DashboardList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const list = toListQuery(params, DASHBOARD_LIST);
        const { total, rows } = await listDashboards(store.db, await visibleOrganisations(), list);
        return listAnswer(
          'dashboards',
          total,
          pageEcho,
          rows.map((r) => presentDashboard(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/dashboards/:dashboard_key',
      arrayIndexes: 'brackets',
      tags,
      summary: 'Get a dashboard',
      access: permission('dashboard', 'read'),
      params: DashboardKeyParams,
      response: DashboardOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        dashboard: presentDashboard(
          await requireDashboard(store.db, await visibleOrganisations(), params.dashboard_key),
          time,
        ),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/dashboards',
      arrayIndexes: 'brackets',
      tags,
      summary: 'Create a dashboard',
      description:
        'A widget that is not valid, or names a thing, group or template the organisation does not have, is a 400 naming the field: dashboard.widgets[2].source.group_key.',
      access: permission('dashboard', 'create'),
      params: CreateDashboardParams,
      response: DashboardOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        const row = await createDashboard(store, actorOf(principal), await targetOrganisation(), params.dashboard);
        return { dashboard: presentDashboard(row, time) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/dashboards/import',
      arrayIndexes: 'brackets',
      tags,
      summary: 'Import a dashboard',
      description:
        'Creates a dashboard from an exported one (the Dashboard object as answered, in {"dashboard": ...}), with new keys for it and its widgets. When a dashboard of the organisation already has its name, the copy is named "<name> (2)", "(3)", ..., the first no dashboard has.',
      access: permission('dashboard', 'create'),
      params: ImportDashboardParams,
      response: DashboardOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        const row = await importDashboard(store, actorOf(principal), await targetOrganisation(), params.dashboard);
        return { dashboard: presentDashboard(row, time) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/dashboards/:dashboard_key',
      arrayIndexes: 'brackets',
      tags,
      summary: 'Update a dashboard',
      description: 'Replaces the fields given (widgets and variables as whole arrays).',
      access: permission('dashboard', 'update'),
      params: UpdateDashboardParams,
      response: DashboardOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const row = await updateDashboard(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.dashboard_key,
          params.dashboard,
        );
        return { dashboard: presentDashboard(row, time) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/dashboards/:dashboard_key',
      arrayIndexes: 'brackets',
      tags,
      summary: 'Delete a dashboard',
      access: permission('dashboard', 'delete'),
      params: DashboardKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteDashboard(store, actorOf(principal), await visibleOrganisations(), params.dashboard_key);
        return {};
      },
    }),
  ];
}
