import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { NotificationActionRow } from '../store/tables.ts';

export function listActions(db: Executor, ruleKey: string, types: string[], list: ListQuery) {
  return fetchPage<NotificationActionRow>(
    db,
    {
      name: 'notification_actions',
      values: { rule: ruleKey, types },
      build: (d, v) =>
        d
          .selectFrom('notification_actions')
          .selectAll()
          .where('rule_key', '=', v.rule as string)
          .where('type', 'in', v.types as string[]),
      columns: {
        sort: {
          created_at: 'created_at',
          updated_at: 'updated_at',
          type: 'type',
          notification_action_key: 'notification_action_key',
        },
        key: 'notification_action_key',
        // search and scope are accepted and ignored on this list (docs/rules.md, "Notification actions").
        search: [],
      },
    },
    list,
  );
}

export function findAction(
  db: Executor,
  organisationKeys: string[],
  key: string,
): Promise<NotificationActionRow | undefined> {
  return db
    .selectFrom('notification_actions')
    .selectAll()
    .where('notification_action_key', '=', key)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export async function insertAction(db: Executor, row: NotificationActionRow): Promise<void> {
  await db.insertInto('notification_actions').values(row).execute();
}

export async function updateAction(db: Executor, key: string, changes: Partial<NotificationActionRow>): Promise<void> {
  await db.updateTable('notification_actions').set(changes).where('notification_action_key', '=', key).execute();
}

export async function deleteAction(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('notification_actions').where('notification_action_key', '=', key).execute();
}

/** The notification actions of a rule. */
export function actionsOfRule(db: Executor, ruleKey: string): Promise<NotificationActionRow[]> {
  return db.selectFrom('notification_actions').selectAll().where('rule_key', '=', ruleKey).execute();
}

export async function deleteActionsOfRule(db: Executor, ruleKey: string): Promise<void> {
  await db.deleteFrom('notification_actions').where('rule_key', '=', ruleKey).execute();
}

/** The notification actions of these rules, oldest first. */
export function listActionsOfRules(db: Executor, ruleKeys: readonly string[]): Promise<NotificationActionRow[]> {
  return db
    .selectFrom('notification_actions')
    .selectAll()
    .where('rule_key', 'in', ruleKeys)
    .orderBy('created_at')
    .orderBy('notification_action_key')
    .execute();
}
