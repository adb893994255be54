/**
 * An organisation's rule set: its enabled rules, compiled, with their notification actions and the
 * groups they watch, kept in memory under the change revisions they were read under (docs/rules.md,
 * "How rules are evaluated": changes take effect at the next event). The rule engine reads the
 * revisions of its organisations in each transaction and reads a rule set again where they differ.
 */
import { type ActionOfRule, listActionsOfRules } from '../actions/service.ts';
import {
  compileMatcher,
  type Expression,
  type Matcher,
  parseRuleCondition,
  parseThingExpression,
  referencedNames,
} from '../expressions/index.ts';
import { groupExpressions, staticMembersOf } from '../groups/service.ts';
import type { Executor } from '../store/store.ts';
import type { RuleRow } from '../store/tables.ts';
import { listEnabledRules } from './repository.ts';

export interface CompiledRule {
  row: RuleRow;
  /** The condition, compiled once: it is checked on every event. */
  matches: Matcher;
  /** The condition reads `thing.<field>`, or the scope needs a dynamic group's expression. */
  needsThing: boolean;
  /** Watches every thing of the organisation. */
  everyThing: boolean;
  thingKeys: ReadonlySet<string>;
  /** Static members of the rule's group. */
  groupMembers: ReadonlySet<string>;
  /** A dynamic group's expression, compiled. */
  inGroup: Matcher | undefined;
  actions: ActionOfRule[];
  /** `for_seconds` in milliseconds. */
  forMs: number;
  autoClear: boolean;
}

/** A rule without a condition (no_data rules may have none) holds for every event. */
const ALWAYS: Matcher = () => true;

/** What a rule's group contributes to its scope. */
export interface RuleGroup {
  /** A dynamic group's expression (text), or null. */
  thingExpression: string | null;
  /** A static group's members. */
  members: readonly string[];
}

/**
 * A rule compiled for evaluation, or undefined when its condition no longer parses (conditions are
 * checked when saved; one that fails later is skipped, not fatal). A group expression that no longer
 * parses leaves the group's static members only.
 */
export function compileRule(
  row: RuleRow,
  group: RuleGroup | undefined,
  actions: ActionOfRule[],
): CompiledRule | undefined {
  let condition: Expression | undefined;
  try {
    condition = row.condition.trim() === '' ? undefined : parseRuleCondition(row.condition);
  } catch {
    return undefined;
  }
  let groupExpression: Expression | undefined;
  if (group?.thingExpression) {
    try {
      groupExpression = parseThingExpression(group.thingExpression);
    } catch {
      groupExpression = undefined;
    }
  }
  const thingKeys = new Set(JSON.parse(row.thing_keys) as string[]);
  return {
    row,
    matches: condition ? compileMatcher(condition) : ALWAYS,
    needsThing:
      groupExpression !== undefined ||
      (condition !== undefined && referencedNames(condition).some((path) => path[0] === 'thing')),
    everyThing: row.thing_template_key === null && thingKeys.size === 0 && row.group_key === null,
    thingKeys,
    groupMembers: new Set(group?.members ?? []),
    inGroup: groupExpression && compileMatcher(groupExpression),
    actions,
    forMs: row.for_seconds * 1000,
    autoClear: row.auto_clear === 1,
  };
}

/** Reads an organisation's enabled rules, their actions and groups, and compiles them, oldest first. */
export async function loadRuleSet(db: Executor, organisationKey: string): Promise<CompiledRule[]> {
  return compileRules(db, organisationKey, await listEnabledRules(db, organisationKey));
}

/** Compiles rules of one organisation with their actions and groups (rules that no longer parse left out). */
export async function compileRules(db: Executor, organisationKey: string, rows: RuleRow[]): Promise<CompiledRule[]> {
  if (rows.length === 0) return [];
  const actions = await listActionsOfRules(
    db,
    rows.map((r) => r.rule_key),
  );
  const groupKeys = [...new Set(rows.flatMap((r) => (r.group_key ? [r.group_key] : [])))];
  const groups = groupKeys.length === 0 ? [] : await groupExpressions(db, organisationKey, groupKeys);
  const members = groupKeys.length === 0 ? [] : await staticMembersOf(db, groupKeys);
  const compiled: CompiledRule[] = [];
  for (const row of rows) {
    const group = groups.find((g) => g.group_key === row.group_key);
    const rule = compileRule(
      row,
      {
        thingExpression: group?.thing_expression ?? null,
        members: members.filter((m) => m.group_key === row.group_key).map((m) => m.thing_key),
      },
      actions.filter((a) => a.rule_key === row.rule_key),
    );
    if (rule) compiled.push(rule);
  }
  return compiled;
}

/** Each organisation's rule set, read again only when the organisation's revision differs. */
export class RuleSetCache {
  private readonly sets = new Map<string, { revision: string; rules: CompiledRule[] }>();

  /** The organisation's rules, read again unless those in memory were read under `revision`. */
  async rulesOf(db: Executor, organisationKey: string, revision: string): Promise<CompiledRule[]> {
    const cached = this.sets.get(organisationKey);
    if (cached && cached.revision === revision) return cached.rules;
    const rules = await loadRuleSet(db, organisationKey);
    this.sets.set(organisationKey, { revision, rules });
    return rules;
  }
}
