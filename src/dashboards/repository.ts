import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { DashboardRow } from '../store/tables.ts';

export function listDashboards(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<DashboardRow>(
    db,
    {
      name: 'dashboards',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('dashboards')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: {
          created_at: 'created_at',
          updated_at: 'updated_at',
          name: 'name',
          dashboard_key: 'dashboard_key',
        },
        key: 'dashboard_key',
        search: ['dashboard_key', 'name', 'description'],
      },
    },
    list,
  );
}

export function findDashboard(
  db: Executor,
  organisationKeys: string[],
  key: string,
): Promise<DashboardRow | undefined> {
  return db
    .selectFrom('dashboards')
    .selectAll()
    .where('dashboard_key', '=', key)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export async function insertDashboard(db: Executor, row: DashboardRow): Promise<void> {
  await db.insertInto('dashboards').values(row).execute();
}

export async function updateDashboard(db: Executor, key: string, changes: Partial<DashboardRow>): Promise<void> {
  await db.updateTable('dashboards').set(changes).where('dashboard_key', '=', key).execute();
}

export async function deleteDashboard(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('dashboards').where('dashboard_key', '=', key).execute();
}
