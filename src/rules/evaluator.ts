/**
 * Evaluating rules over a transaction's events, without the store (docs/rules.md, "How rules are
 * evaluated"): events in, firings out. Two steps, because `on_enter` rules depend on state kept in the
 * store: `evaluate` gives the `every_event` firings and, for each `on_enter` rule and thing, what its
 * verdicts on the events decide; `enter` then turns those and the stored states into firings and the
 * states to store.
 */
import { ruleConditionLookup, thingLookup } from '../expressions/index.ts';
import type { CompiledRule } from './rule-set.ts';
import { FRESH_STATE, keyOf, type RuleState } from './state-repository.ts';

export { FRESH_STATE, type RuleState };

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
 * One rule that keeps state per thing (`on_enter`, `auto_clear`, `no_data`) and one thing, with the
 * thing's events of a transaction in arrival order and the rule's verdict on each (no_data rules do
 * not evaluate their condition on events: each event only ends a silence).
 */
export interface StatefulPair {
  /** Orders pairs: by rule key, then thing key (state-repository.ts, keyOf). */
  key: string;
  rule: CompiledRule;
  thingKey: string;
  /** The thing's first event. */
  first: Candidate;
  /**
   * Whether the rule's verdict on one of the events was true. Until then a pair keeps only its first
   * event: the events before the first true verdict do no more than the first of them does (end a
   * run, clear the alert kept open), and most pairs hold on none.
   */
  held: boolean;
  /** The events from the first true verdict on, and the verdict on each (empty while not held). */
  candidates: Candidate[];
  verdicts: boolean[];
}

export interface Verdicts {
  /** Firings of stateless rules (`every_event` without `auto_clear`), in the order their events arrived. */
  firings: Firing[];
  /** The stateful rules' pairs, in key order: the order their state rows are locked in. */
  pairs: StatefulPair[];
}

/** What a stateful pair causes at one of its events: a firing, or the clearing of the alert it keeps open. */
export interface Effect extends Firing {
  kind: 'fire' | 'clear';
  /** Index of the pair in the pairs given to `enter`. */
  pair: number;
}

/** The events and verdicts of a pair not held (never added to). */
const NONE: Candidate[] = [];
const NO_VERDICTS: boolean[] = [];

/** Whether a rule watches the event's thing: its template, its listed things or its group (the union). */
export function watches(rule: CompiledRule, candidate: Candidate, thing: object | undefined): boolean {
  if (rule.everyThing) return true;
  if (rule.row.thing_template_key !== null && rule.row.thing_template_key === candidate.templateKey) return true;
  if (rule.thingKeys.has(candidate.thingKey) || rule.groupMembers.has(candidate.thingKey)) return true;
  if (rule.inGroup && thing) return rule.inGroup(thingLookup(thing));
  return false;
}

/** Whether a rule keeps state per thing: `every_event` rules without `auto_clear` do not. */
export const isStateful = (rule: CompiledRule): boolean => rule.row.trigger !== 'every_event' || rule.autoClear;

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
  const keepsState = rules.map(isStateful);
  const noData = rules.map((rule) => rule.row.trigger === 'no_data');
  const firings: Firing[] = [];
  // Each thing's place in arrival order, and each stateful rule's pairs by that place: one map
  // lookup per event rather than one per event and rule.
  const places = new Map<string, number>();
  const stateful = rules.map((): StatefulPair[] => []);
  for (const candidate of candidates) {
    let place = places.get(candidate.thingKey);
    if (place === undefined) {
      place = places.size;
      places.set(candidate.thingKey, place);
    }
    const thing = needsThing ? thingOf(candidate.thingKey) : undefined;
    const lookup = ruleConditionLookup(candidate.event.data, thing);
    for (let index = 0; index < rules.length; index++) {
      const rule = rules[index] as CompiledRule;
      if (!watches(rule, candidate, thing)) continue;
      const matched = !noData[index] && rule.matches(lookup);
      if (!keepsState[index]) {
        if (matched) firings.push({ rule, candidate });
        continue;
      }
      const ofRule = stateful[index] as StatefulPair[];
      let pair = ofRule[place];
      if (!pair) {
        pair = {
          key: keyOf(rule.row.rule_key, candidate.thingKey),
          rule,
          thingKey: candidate.thingKey,
          first: candidate,
          held: false,
          candidates: NONE,
          verdicts: NO_VERDICTS,
        };
        ofRule[place] = pair;
      }
      if (pair.held) {
        pair.candidates.push(candidate);
        pair.verdicts.push(matched);
      } else if (matched) {
        pair.held = true;
        pair.candidates = [candidate];
        pair.verdicts = [true];
      }
    }
  }
  const pairs: StatefulPair[] = [];
  for (const ofRule of stateful) for (const pair of ofRule) if (pair) pairs.push(pair);
  pairs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { firings, pairs };
}

/**
 * Moves one pair's state through one event (docs/rules.md, "Rule timing"), adding what it causes to
 * `effects`. An `on_enter` rule fires at the first event at least `for_seconds` (by event time) after
 * the first event of the run its condition has held on, once per run; an event on which the condition
 * fails ends the run. An `every_event` rule with `auto_clear` fires on each event on which the
 * condition holds while it keeps no alert open. A rule with `auto_clear` raises no other alert while
 * it keeps one open, and clears it at the first event on which the condition fails; a `no_data`
 * rule's at the thing's first event.
 */
function advance(
  state: RuleState,
  rule: CompiledRule,
  candidate: Candidate,
  verdict: boolean,
  pairIndex: number,
  effects: Effect[],
): void {
  const effect = (kind: Effect['kind']) => effects.push({ kind, rule, candidate, pair: pairIndex });
  if (!verdict) {
    state.matched = false;
    state.runStartedAt = null;
    state.fired = false;
    if (state.openAlert) {
      effect('clear');
      state.openAlert = false;
    }
    return;
  }
  if (!state.matched) {
    state.matched = true;
    state.runStartedAt = candidate.event.timestamp;
    state.fired = false;
  }
  if (rule.row.trigger === 'every_event') state.fired = false;
  // A state stored before runs were kept has none: its run counts from here.
  state.runStartedAt ??= candidate.event.timestamp;
  if (state.fired || candidate.event.timestamp - state.runStartedAt < rule.forMs) return;
  state.fired = true;
  if (state.openAlert) return;
  effect('fire');
  if (rule.autoClear) state.openAlert = true;
}

/**
 * What the stateful pairs cause (in the order their events arrived) and each pair's state after its
 * events, given each pair's stored state (`stored[i]` for `pairs[i]`: undefined when none).
 */
export function enter(
  pairs: readonly StatefulPair[],
  stored: readonly (RuleState | undefined)[],
): { effects: Effect[]; states: RuleState[] } {
  const effects: Effect[] = [];
  const states = pairs.map((pair, pairIndex) => {
    const before = stored[pairIndex] ?? FRESH_STATE;
    // Events on which the condition fails leave a state at rest as it is (most events, most rules).
    if (!pair.held && atRest(before)) return before;
    const state = { ...before };
    if (pair.first !== pair.candidates[0]) advance(state, pair.rule, pair.first, false, pairIndex, effects);
    for (let index = 0; index < pair.candidates.length; index++) {
      advance(
        state,
        pair.rule,
        pair.candidates[index] as Candidate,
        pair.verdicts[index] as boolean,
        pairIndex,
        effects,
      );
    }
    return state;
  });
  // In the order their events arrived (a stable sort: effects of one event keep pair order).
  effects.sort((a, b) => a.candidate.order - b.candidate.order);
  return { effects, states };
}

/** Whether a state is at rest: no run, nothing fired in it, no alert kept open. */
export const atRest = (s: RuleState): boolean => !s.matched && s.runStartedAt === null && !s.fired && !s.openAlert;

/** Whether two states differ (the state row is written only then). */
export const sameState = (a: RuleState, b: RuleState): boolean =>
  a.matched === b.matched && a.runStartedAt === b.runStartedAt && a.fired === b.fired && a.openAlert === b.openAlert;
