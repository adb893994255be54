import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { RuleRow } from '../store/tables.ts';

export interface RuleFilter {
  organisationKeys: string[];
  thingTemplateKey?: string | undefined;
  groupKey?: string | undefined;
  enabled?: boolean | undefined;
}

export function listRules(db: Executor, filter: RuleFilter, list: ListQuery) {
  return fetchPage<RuleRow>(
    db,
    {
      name: 'rules',
      values: {
        organisations: filter.organisationKeys,
        template: filter.thingTemplateKey,
        group: filter.groupKey,
        enabled: filter.enabled === undefined ? undefined : filter.enabled ? 1 : 0,
      },
      build: (d, v) => {
        let query = d
          .selectFrom('rules')
          .selectAll()
          .where(inOrganisations(v.organisations as string[]));
        if (v.template !== undefined) query = query.where('thing_template_key', '=', v.template as string);
        if (v.group !== undefined) query = query.where('group_key', '=', v.group as string);
        if (v.enabled !== undefined) query = query.where('enabled', '=', v.enabled as number);
        return query;
      },
      columns: {
        sort: { created_at: 'created_at', updated_at: 'updated_at', name: 'name', rule_key: 'rule_key' },
        key: 'rule_key',
        search: ['rule_key', 'name', 'description'],
      },
    },
    list,
  );
}

export function findRule(db: Executor, organisationKeys: string[], ruleKey: string): Promise<RuleRow | undefined> {
  return db
    .selectFrom('rules')
    .selectAll()
    .where('rule_key', '=', ruleKey)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export async function insertRule(db: Executor, row: RuleRow): Promise<void> {
  await db.insertInto('rules').values(row).execute();
}

export async function updateRule(db: Executor, ruleKey: string, changes: Partial<RuleRow>): Promise<void> {
  await db.updateTable('rules').set(changes).where('rule_key', '=', ruleKey).execute();
}

/** Removes the rule; its state and notification actions are removed by the caller. */
export async function deleteRule(db: Executor, ruleKey: string): Promise<void> {
  await db.deleteFrom('rules').where('rule_key', '=', ruleKey).execute();
}

/** An organisation's enabled rules, oldest first: the rules its events are checked against. */
export function listEnabledRules(db: Executor, organisationKey: string): Promise<RuleRow[]> {
  return db
    .selectFrom('rules')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('enabled', '=', 1)
    .orderBy('created_at')
    .orderBy('rule_key')
    .execute();
}

/** The enabled no_data rules of an organisation (docs/rules.md, "Rule timing"). */
export function listSilenceRules(db: Executor, organisationKey: string): Promise<RuleRow[]> {
  return db
    .selectFrom('rules')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('enabled', '=', 1)
    .where('trigger', '=', 'no_data')
    .orderBy('created_at')
    .orderBy('rule_key')
    .execute();
}

/** These rules, of any organisation (the no_data timer reads the rules of the silences due). */
export function findRulesByKeys(db: Executor, ruleKeys: readonly string[]): Promise<RuleRow[]> {
  return db
    .selectFrom('rules')
    .selectAll()
    .where('rule_key', 'in', [...ruleKeys])
    .execute();
}
