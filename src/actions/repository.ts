import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { NotificationAction, NotificationActionRow } from '../store/tables.ts';

/** What the rule engine keeps of an action: which one to queue, never its credentials. */
export type ActionOfRule = Pick<NotificationAction, 'notification_action_key' | 'rule_key' | 'type'>;

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

/** Writes the whole row (its credentials are sealed together, so none changes alone). */
export async function updateAction(db: Executor, row: NotificationActionRow): Promise<void> {
  const { notification_action_key: key, created_at: _created, ...columns } = row;
  await db.updateTable('notification_actions').set(columns).where('notification_action_key', '=', key).execute();
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

/** The notification actions of these rules, oldest first, without their credentials. */
export function listActionsOfRules(db: Executor, ruleKeys: readonly string[]): Promise<ActionOfRule[]> {
  return db
    .selectFrom('notification_actions')
    .select(['notification_action_key', 'rule_key', 'type'])
    .where('rule_key', 'in', ruleKeys)
    .orderBy('created_at')
    .orderBy('notification_action_key')
    .execute();
}

/** Every action's sealed credentials, by key (checking and re-sealing them under another key). */
export async function sealedActionSecrets(
  db: Executor,
): Promise<{ notification_action_key: string; secrets_sealed: string }[]> {
  const rows = await db
    .selectFrom('notification_actions')
    .select(['notification_action_key', 'secrets_sealed'])
    .where('secrets_sealed', 'is not', null)
    .orderBy('notification_action_key')
    .execute();
  return rows.map((row) => ({
    notification_action_key: row.notification_action_key,
    secrets_sealed: row.secrets_sealed ?? '',
  }));
}

export async function resealActionSecrets(db: Executor, key: string, secretsSealed: string): Promise<void> {
  await db
    .updateTable('notification_actions')
    .set({ secrets_sealed: secretsSealed })
    .where('notification_action_key', '=', key)
    .execute();
}

/** Actions stored before their credentials were sealed. */
export function unsealedActions(db: Executor): Promise<NotificationActionRow[]> {
  return db
    .selectFrom('notification_actions')
    .selectAll()
    .where('secrets_sealed', 'is', null)
    .where((eb) => eb.or([eb('url', 'is not', null), eb('headers', 'is not', null), eb('query', 'is not', null)]))
    .execute();
}
