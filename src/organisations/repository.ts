import type { ListQuery } from '../core/list-query.ts';
import { markThingSlots } from '../events/template-rollups.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import { ORGANISATION_SCOPED_TABLES, type OrganisationRow } from '../store/tables.ts';

export function findOrganisation(db: Executor, organisationKey: string): Promise<OrganisationRow | undefined> {
  return db.selectFrom('organisations').selectAll().where('organisation_key', '=', organisationKey).executeTakeFirst();
}

/** The oldest top-level organisation: the one made at bootstrap. */
export function findFirstOrganisation(db: Executor): Promise<OrganisationRow | undefined> {
  return db
    .selectFrom('organisations')
    .selectAll()
    .where('parent_organisation_key', 'is', null)
    .orderBy('created_at')
    .orderBy('organisation_key')
    .executeTakeFirst();
}

export async function childOrganisationKeys(db: Executor, parentKey: string): Promise<string[]> {
  const rows = await db
    .selectFrom('organisations')
    .select('organisation_key')
    .where('parent_organisation_key', '=', parentKey)
    .execute();
  return rows.map((r) => r.organisation_key);
}

export function listChildOrganisations(db: Executor, parentKey: string, list: ListQuery) {
  return fetchPage<OrganisationRow>(
    db,
    {
      name: 'child_organisations',
      values: { parent: parentKey },
      build: (d, v) =>
        d
          .selectFrom('organisations')
          .selectAll()
          .where('parent_organisation_key', '=', v.parent as string),
      columns: {
        sort: {
          created_at: 'created_at',
          updated_at: 'updated_at',
          name: 'name',
          organisation_key: 'organisation_key',
        },
        key: 'organisation_key',
        search: ['organisation_key', 'name'],
      },
    },
    list,
  );
}

export async function insertOrganisation(db: Executor, row: OrganisationRow): Promise<void> {
  await db.insertInto('organisations').values(row).execute();
}

export async function updateOrganisation(db: Executor, key: string, changes: Partial<OrganisationRow>): Promise<void> {
  await db.updateTable('organisations').set(changes).where('organisation_key', '=', key).execute();
}

/** Removes an organisation and every row that belongs to it. */
export async function deleteOrganisation(db: Executor, key: string): Promise<void> {
  // Templates of other organisations may count its things (events/template-rollups.ts).
  const things = await db.selectFrom('things').select('thing_id').where('organisation_key', '=', key).execute();
  await markThingSlots(
    db,
    things.map((t) => Number(t.thing_id)),
  );
  for (const table of ['events', 'event_rollups'] as const) {
    await db
      .deleteFrom(table)
      .where('thing_id', 'in', (eb) => eb.selectFrom('things').select('thing_id').where('organisation_key', '=', key))
      .execute();
  }
  for (const table of ORGANISATION_SCOPED_TABLES) {
    await db.deleteFrom(table).where('organisation_key', '=', key).execute();
  }
  await db.deleteFrom('organisations').where('organisation_key', '=', key).execute();
}
