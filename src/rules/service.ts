/**
 * Rules (docs/rules.md, "Rules"): which things to watch, the condition over their events, and what to
 * raise. The rule engine (engine.ts) evaluates them on ingestion; every change here is audited in its
 * transaction, which raises the change revision the engine's cache is checked against
 * (audit/revisions.ts).
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { invalidParam, notFound, requiredParam, unknownReference } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { STORED_TIME } from '../core/time.ts';
import { ExpressionError, parseRuleCondition } from '../expressions/index.ts';
import { findGroup } from '../groups/service.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import type { RuleRow } from '../store/tables.ts';
import { findTemplate } from '../templates/service.ts';
import { requireKnownThings } from '../things/service.ts';
import { presentRule } from './presenter.ts';
import * as rules from './repository.ts';
import { clearRuleStates, resetRuleStates } from './state-repository.ts';

export interface RuleInput {
  name: string;
  description?: string | undefined;
  thing_template_key?: string | null | undefined;
  thing_keys?: string[] | undefined;
  group_key?: string | null | undefined;
  condition?: string | undefined;
  alert_type?: number | null | undefined;
  alert_message?: string | undefined;
  trigger?: 'on_enter' | 'every_event' | 'no_data' | undefined;
  enabled?: boolean | undefined;
  for_seconds?: number | undefined;
  auto_clear?: boolean | undefined;
}

const snapshot = (row: RuleRow) => presentRule(row, STORED_TIME);

/** The fields whose change starts a rule's states over (docs/rules.md, "Rule timing"). */
const RESETTING = [
  'condition',
  'trigger',
  'for_seconds',
  'auto_clear',
  'thing_template_key',
  'thing_keys',
  'group_key',
] as const satisfies readonly (keyof RuleRow)[];

/**
 * What another capability deletes with a rule, in the rule's transaction, before the rule goes (the
 * notification actions register theirs: actions/service.ts, which needs this module to find rules).
 */
export type RuleDeletion = (db: Executor, actor: Actor, rule: RuleRow) => Promise<void>;

const deletions: RuleDeletion[] = [];

/**
 * What another capability does in the transaction that creates or updates a rule, once it is written
 * (no_data watches register theirs: rules/silences.ts, which reads rules through the rule set).
 */
export type RuleSaving = (db: Tx, after: RuleRow, before: RuleRow | undefined, now: number) => Promise<void>;

const savings: RuleSaving[] = [];

export function onRuleSaved(saving: RuleSaving): void {
  if (!savings.includes(saving)) savings.push(saving);
}

export function onRuleDeleted(deletion: RuleDeletion): void {
  if (!deletions.includes(deletion)) deletions.push(deletion);
}

function checkCondition(condition: string): string {
  try {
    parseRuleCondition(condition);
  } catch (error) {
    if (error instanceof ExpressionError) throw invalidParam('rule.condition', error.message);
    throw error;
  }
  return condition;
}

/**
 * How the rule's trigger, timing and alert fit together (docs/rules.md, "Rule timing"): a condition
 * unless no_data; for_seconds only with on_enter and no_data, which needs it; auto_clear only with an
 * alert to clear.
 */
function checkTiming(row: RuleRow): void {
  if (row.trigger !== 'no_data' && row.condition === '') throw requiredParam('rule.condition');
  if (row.trigger === 'every_event' && row.for_seconds > 0) {
    throw invalidParam('rule.for_seconds', 'applies to on_enter and no_data rules only');
  }
  if (row.trigger === 'no_data' && row.for_seconds < 1) {
    throw invalidParam('rule.for_seconds', 'a no_data rule needs the silence to wait for: at least 1 second');
  }
  if (row.auto_clear === 1 && row.alert_type === null) {
    throw invalidParam('rule.auto_clear', 'needs an alert_type: a rule that raises no alert has none to clear');
  }
}

/**
 * Every key the rule names must be one the organisation has (a 400 naming the param otherwise): on an
 * update, those the request gives. A template, group or thing deleted since the rule named it leaves
 * the rule's scope without it, and a change of something else (its description, say) goes through.
 */
async function checkReferences(
  db: Executor,
  organisationKey: string,
  row: RuleRow,
  given?: Partial<RuleInput>,
): Promise<void> {
  const organisations = [organisationKey];
  const checks = (field: keyof RuleInput) => given === undefined || given[field] !== undefined;
  if (
    checks('thing_template_key') &&
    row.thing_template_key !== null &&
    !(await findTemplate(db, organisations, row.thing_template_key))
  ) {
    throw unknownReference('rule.thing_template_key', row.thing_template_key);
  }
  if (checks('group_key') && row.group_key !== null && !(await findGroup(db, organisations, row.group_key))) {
    throw unknownReference('rule.group_key', row.group_key);
  }
  if (checks('thing_keys')) {
    await requireKnownThings(db, organisations, JSON.parse(row.thing_keys) as string[], 'rule.thing_keys');
  }
}

export async function createRule(store: Store, actor: Actor, organisationKey: string, input: RuleInput) {
  const now = Date.now();
  const row: RuleRow = {
    rule_key: newKey(),
    organisation_key: organisationKey,
    name: input.name,
    description: input.description ?? '',
    thing_template_key: input.thing_template_key ?? null,
    thing_keys: JSON.stringify([...new Set(input.thing_keys ?? [])]),
    group_key: input.group_key ?? null,
    condition: input.condition === undefined ? '' : checkCondition(input.condition),
    alert_type: input.alert_type === undefined ? 0 : input.alert_type,
    alert_message: input.alert_message ?? '',
    trigger: input.trigger ?? 'on_enter',
    enabled: input.enabled === false ? 0 : 1,
    for_seconds: input.for_seconds ?? 0,
    auto_clear: input.auto_clear ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
  checkTiming(row);
  return store.transaction(async (tx) => {
    await checkReferences(tx, organisationKey, row);
    await rules.insertRule(tx, row);
    for (const saved of savings) await saved(tx, row, undefined, now);
    await recordChange(tx, actor, {
      organisationKey,
      action: 'create',
      entityType: 'Rule',
      entityKey: row.rule_key,
      entityName: row.name,
      after: snapshot(row),
    });
    return row;
  });
}

export function listRules(db: Executor, filter: rules.RuleFilter, list: ListQuery) {
  return rules.listRules(db, filter, list);
}

/** A rule of these organisations, or undefined. */
export function findRule(db: Executor, organisationKeys: string[], ruleKey: string): Promise<RuleRow | undefined> {
  return rules.findRule(db, organisationKeys, ruleKey);
}

export async function requireRule(db: Executor, organisationKeys: string[], ruleKey: string): Promise<RuleRow> {
  const row = await rules.findRule(db, organisationKeys, ruleKey);
  if (!row) throw notFound('rule', 'rule_key');
  return row;
}

export async function updateRule(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  ruleKey: string,
  changes: Partial<RuleInput>,
) {
  return store.transaction(async (tx) => {
    const before = await requireRule(tx, organisationKeys, ruleKey);
    const after: RuleRow = {
      ...before,
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.thing_template_key !== undefined ? { thing_template_key: changes.thing_template_key } : {}),
      ...(changes.thing_keys !== undefined ? { thing_keys: JSON.stringify([...new Set(changes.thing_keys)]) } : {}),
      ...(changes.group_key !== undefined ? { group_key: changes.group_key } : {}),
      ...(changes.condition !== undefined ? { condition: checkCondition(changes.condition) } : {}),
      ...(changes.alert_type !== undefined ? { alert_type: changes.alert_type } : {}),
      ...(changes.alert_message !== undefined ? { alert_message: changes.alert_message } : {}),
      ...(changes.trigger !== undefined ? { trigger: changes.trigger } : {}),
      ...(changes.enabled !== undefined ? { enabled: changes.enabled ? 1 : 0 } : {}),
      ...(changes.for_seconds !== undefined ? { for_seconds: changes.for_seconds } : {}),
      ...(changes.auto_clear !== undefined ? { auto_clear: changes.auto_clear ? 1 : 0 } : {}),
      updated_at: Date.now(),
    };
    checkTiming(after);
    await checkReferences(tx, before.organisation_key, after, changes);
    const { rule_key: _k, organisation_key: _o, created_at: _c, ...columns } = after;
    await rules.updateRule(tx, ruleKey, columns);
    // A changed condition, trigger, timing or scope starts from a clean state: the next matching event
    // starts a new run. The alerts it keeps open stay its own unless auto_clear is turned off.
    if (RESETTING.some((field) => after[field] !== before[field])) {
      await resetRuleStates(tx, ruleKey, before.auto_clear === 1 && after.auto_clear === 0);
    }
    for (const saved of savings) await saved(tx, after, before, after.updated_at);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'update',
      entityType: 'Rule',
      entityKey: ruleKey,
      entityName: after.name,
      before: snapshot(before),
      after: snapshot(after),
    });
    return after;
  });
}

/** Deletes the rule and its notification actions (each with its audit trail); pending deliveries lapse. */
export async function deleteRule(store: Store, actor: Actor, organisationKeys: string[], ruleKey: string) {
  await store.transaction(async (tx) => {
    const before = await requireRule(tx, organisationKeys, ruleKey);
    for (const deletion of deletions) await deletion(tx, actor, before);
    await clearRuleStates(tx, ruleKey);
    await rules.deleteRule(tx, ruleKey);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'Rule',
      entityKey: ruleKey,
      entityName: before.name,
      before: snapshot(before),
    });
  });
}
