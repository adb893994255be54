import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { ThingTemplateRow } from '../store/tables.ts';

export function listTemplates(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<ThingTemplateRow>(
    db,
    {
      name: 'thing_templates',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('thing_templates')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: {
          created_at: 'created_at',
          updated_at: 'updated_at',
          name: 'name',
          thing_template_key: 'thing_template_key',
        },
        key: 'thing_template_key',
        search: ['thing_template_key', 'name', 'description'],
      },
    },
    list,
  );
}

export function findTemplate(
  db: Executor,
  organisationKeys: string[],
  key: string,
): Promise<ThingTemplateRow | undefined> {
  return db
    .selectFrom('thing_templates')
    .selectAll()
    .where('thing_template_key', '=', key)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

/** The template of an organisation with this name (names are unique in an organisation), or undefined. */
export function findTemplateNamed(db: Executor, organisationKey: string, name: string) {
  return db
    .selectFrom('thing_templates')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('name', '=', name)
    .executeTakeFirst();
}

export function findDefaultTemplate(db: Executor, organisationKey: string): Promise<ThingTemplateRow | undefined> {
  return db
    .selectFrom('thing_templates')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('is_default', '=', 1)
    .executeTakeFirst();
}

export async function insertTemplate(db: Executor, row: ThingTemplateRow): Promise<void> {
  await db.insertInto('thing_templates').values(row).execute();
}

/** A template's metrics (JSON text), by key alone: for ingestion, which already checked the organisation. */
export async function templateMetrics(db: Executor, key: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('thing_templates')
    .select('metrics')
    .where('thing_template_key', '=', key)
    .executeTakeFirst();
  return row?.metrics;
}

export async function updateTemplate(db: Executor, key: string, changes: Partial<ThingTemplateRow>): Promise<void> {
  await db.updateTable('thing_templates').set(changes).where('thing_template_key', '=', key).execute();
}

export async function deleteTemplate(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('thing_templates').where('thing_template_key', '=', key).execute();
}

export async function countThingsOfTemplate(db: Executor, key: string): Promise<number> {
  const row = await db
    .selectFrom('things')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('thing_template_key', '=', key)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}
