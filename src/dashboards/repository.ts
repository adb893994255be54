import type { ListQuery } from '../core/list-query.ts';
import { engineOfDb } from '../store/dialect.ts';
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

/**
 * Holds, to the end of the transaction, the organisation's turn at choosing a dashboard's name, so
 * that two imports at once on PostgreSQL do not both take the same free name (SQLite writes one
 * transaction at a time). Of the organisation's other writes, it holds up only a change of its own row.
 */
export async function lockNames(db: Executor, organisationKey: string): Promise<void> {
  if (engineOfDb(db) !== 'postgres') return;
  await db
    .selectFrom('organisations')
    .select('organisation_key')
    .where('organisation_key', '=', organisationKey)
    .forNoKeyUpdate()
    .execute();
}

/** The names of an organisation's dashboards that start with `prefix` (counted in characters). */
export async function namesStartingWith(db: Executor, organisationKey: string, prefix: string): Promise<string[]> {
  const rows = await db
    .selectFrom('dashboards')
    .select('name')
    .where('organisation_key', '=', organisationKey)
    .where((eb) => eb(eb.fn('substr', ['name', eb.val(1), eb.val([...prefix].length)]), '=', prefix))
    .execute();
  return rows.map((r) => r.name);
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
