/**
 * Evaluating rules over a transaction's events, without the store (docs/rules.md, "How rules are
 * evaluated"): events in, firings out. Two steps, because `on_enter` rules depend on state kept in the
 * store: `evaluate` gives the `every_event` firings and, for each `on_enter` rule and thing, what its
 * verdicts on the events decide; `enter` then turns those and the stored states into firings and the
 * states to store.
 */
import { ruleConditionLookup, thingLookup } from '../expressions/index.ts';
import type { CompiledRule } from './rule-set.ts';

/** One event of one thing, as a rule sees it. */
export interface Candidate {
  event: { timestamp: number; data: Record<string, unknown> };
  thingKey: string;
  templateKey: string;
  /** Arrival order within the transaction. */
  order: number;
}

export interface Firing {
  rule: CompiledRule;
  candidate: Candidate;
}

/**
 * One `on_enter` rule and one thing with the rule's verdicts on the thing's events of a transaction, as
 * much of them as decides its firings: the first verdict (which fires if the stored state was false),
 * every later event where the verdict turns true, and the last verdict (the state to store).
 */
export interface EnteringPair {
  /** Orders pairs: by rule key, then thing key. */
  key: string;
  rule: CompiledRule;
  thingKey: string;
  first: Candidate;
  firstMatched: boolean;
  rising: Candidate[];
  lastMatched: boolean;
}

export interface Verdicts {
  /** Firings of `every_event` rules, in the order their events arrived. */
  firings: Firing[];
  /** The `on_enter` rules' pairs, in key order: the order their state rows are locked in. */
  entering: EnteringPair[];
}

/** The state of an `on_enter` rule for a thing: whether its condition held at the thing's last event. */
export interface StateChange {
  rule: CompiledRule;
  thingKey: string;
  matched: boolean;
}

const pairKey = (ruleKey: string, thingKey: string) => `${ruleKey}\u0000${thingKey}`;

/** Whether a rule watches the event's thing: its template, its listed things or its group (the union). */
export function watches(rule: CompiledRule, candidate: Candidate, thing: object | undefined): boolean {
  if (rule.everyThing) return true;
  if (rule.row.thing_template_key !== null && rule.row.thing_template_key === candidate.templateKey) return true;
  if (rule.thingKeys.has(candidate.thingKey) || rule.groupMembers.has(candidate.thingKey)) return true;
  if (rule.inGroup && thing) return rule.inGroup(thingLookup(thing));
  return false;
}

/**
 * The verdicts of `rules` (in their order) on `candidates` (in arrival order). `thingOf` gives a
 * thing's view as expressions read it (or undefined for a thing that is gone); it is asked only when a
 * rule reads `thing.<field>` or watches a dynamic group.
 */
export function evaluate(
  rules: readonly CompiledRule[],
  candidates: readonly Candidate[],
  thingOf: (thingKey: string) => object | undefined,
): Verdicts {
  const needsThing = rules.some((r) => r.needsThing);
  const firings: Firing[] = [];
  // By rule in the order of `rules`, then by thing.
  const entering = rules.map(() => new Map<string, EnteringPair>());
  for (const candidate of candidates) {
    const thing = needsThing ? thingOf(candidate.thingKey) : undefined;
    const lookup = ruleConditionLookup(candidate.event.data, thing);
    for (let index = 0; index < rules.length; index++) {
      const rule = rules[index] as CompiledRule;
      if (!watches(rule, candidate, thing)) continue;
      const matched = rule.matches(lookup);
      if (rule.row.trigger === 'every_event') {
        if (matched) firings.push({ rule, candidate });
        continue;
      }
      const ofRule = entering[index] as Map<string, EnteringPair>;
      const pair = ofRule.get(candidate.thingKey);
      if (!pair) {
        ofRule.set(candidate.thingKey, {
          key: pairKey(rule.row.rule_key, candidate.thingKey),
          rule,
          thingKey: candidate.thingKey,
          first: candidate,
          firstMatched: matched,
          rising: [],
          lastMatched: matched,
        });
        continue;
      }
      if (matched && !pair.lastMatched) pair.rising.push(candidate);
      pair.lastMatched = matched;
    }
  }
  const pairs = entering.flatMap((ofRule) => [...ofRule.values()]);
  pairs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { firings, entering: pairs };
}

/**
 * The firings of `on_enter` pairs (in arrival order) and the states to store, given each pair's stored
 * state (`stored[i]` for `pairs[i]`: undefined when none). A pair fires where its condition turns true:
 * at its first event if the stored state was not true, then at each rise between the transaction's own
 * events. Its state changes where its last verdict differs from the stored one.
 */
export function enter(
  pairs: readonly EnteringPair[],
  stored: readonly (boolean | undefined)[],
): { firings: Firing[]; changes: StateChange[] } {
  const firings: Firing[] = [];
  const changes: StateChange[] = [];
  pairs.forEach((pair, index) => {
    const before = stored[index];
    if (pair.firstMatched && !before) firings.push({ rule: pair.rule, candidate: pair.first });
    for (const candidate of pair.rising) firings.push({ rule: pair.rule, candidate });
    if (pair.lastMatched !== before)
      changes.push({ rule: pair.rule, thingKey: pair.thingKey, matched: pair.lastMatched });
  });
  // Firings in the order their events arrived (a stable sort: pairs of one event keep key order).
  firings.sort((a, b) => a.candidate.order - b.candidate.order);
  return { firings, changes };
}
