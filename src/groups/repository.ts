import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { GroupRow } from '../store/tables.ts';

export function listGroups(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<GroupRow>(
    db,
    {
      name: 'groups',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('groups')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: { created_at: 'created_at', updated_at: 'updated_at', name: 'name', group_key: 'group_key' },
        key: 'group_key',
        search: ['group_key', 'name'],
        tags: 'tags',
      },
    },
    list,
  );
}

export function findGroup(db: Executor, organisationKeys: string[], groupKey: string): Promise<GroupRow | undefined> {
  return db
    .selectFrom('groups')
    .selectAll()
    .where('group_key', '=', groupKey)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export async function insertGroup(db: Executor, row: GroupRow): Promise<void> {
  await db.insertInto('groups').values(row).execute();
}

export async function updateGroup(db: Executor, groupKey: string, changes: Partial<GroupRow>): Promise<void> {
  await db.updateTable('groups').set(changes).where('group_key', '=', groupKey).execute();
}

export async function deleteGroup(db: Executor, groupKey: string): Promise<void> {
  await db.deleteFrom('group_things').where('group_key', '=', groupKey).execute();
  await db.deleteFrom('groups').where('group_key', '=', groupKey).execute();
}

export async function staticMembers(db: Executor, groupKey: string): Promise<string[]> {
  const rows = await db
    .selectFrom('group_things')
    .select('thing_key')
    .where('group_key', '=', groupKey)
    .orderBy('thing_key')
    .execute();
  return rows.map((r) => r.thing_key);
}

/** Replaces the members of a static group. */
export async function setStaticMembers(db: Executor, group: GroupRow, thingKeys: string[]): Promise<void> {
  await db.deleteFrom('group_things').where('group_key', '=', group.group_key).execute();
  for (let i = 0; i < thingKeys.length; i += 500) {
    const chunk = thingKeys.slice(i, i + 500);
    await db
      .insertInto('group_things')
      .values(
        chunk.map((thing_key) => ({ group_key: group.group_key, thing_key, organisation_key: group.organisation_key })),
      )
      .execute();
  }
}

/** The expressions of an organisation's groups among `groupKeys` (null for a static group). */
export function groupExpressions(
  db: Executor,
  organisationKey: string,
  groupKeys: readonly string[],
): Promise<Pick<GroupRow, 'group_key' | 'thing_expression'>[]> {
  return db
    .selectFrom('groups')
    .select(['group_key', 'thing_expression'])
    .where('group_key', 'in', groupKeys)
    .where('organisation_key', '=', organisationKey)
    .execute();
}

/** The static members of these groups, as (group, thing) pairs. */
export function staticMembersOf(
  db: Executor,
  groupKeys: readonly string[],
): Promise<{ group_key: string; thing_key: string }[]> {
  return db.selectFrom('group_things').select(['group_key', 'thing_key']).where('group_key', 'in', groupKeys).execute();
}
