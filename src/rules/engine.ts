/**
 * The rule engine (docs/rules.md, "How rules are evaluated"): every stored event is checked against its
 * organisation's enabled rules inside the transaction that stores it, and what a firing rule causes
 * (its alert, its queued deliveries) commits with the event. This module runs the steps, each in a
 * module of its own:
 *
 * - rule-set.ts: each organisation's rules, compiled, kept under the change revisions they were read
 *   under; every transaction reads its organisations' revisions first, in one statement, and reads a
 *   rule set again where they differ, so a change committed through any instance applies;
 * - evaluator.ts: the rules' verdicts on the events, without the store;
 * - state-repository.ts: `on_enter` states, kept in the store (rule_states);
 * - firing.ts: alerts and deliveries.
 */

import { clearAlertByRule, onAlertCleared } from '../alerts/service.ts';
import { raiseRuleStateRevision, readRuleRevisions } from '../audit/revisions.ts';
import type { IngestBatch } from '../events/writer.ts';
import type { Tx } from '../store/store.ts';
import { expressionViewOfThing } from '../things/presenter.ts';
import { findThingsOfOrganisation, type ThingWithTemplate } from '../things/service.ts';
import { atRest, type Candidate, type Effect, enter, evaluate, sameState } from './evaluator.ts';
import { fire } from './firing.ts';
import { type CompiledRule, RuleSetCache } from './rule-set.ts';
import { forgetOpenAlert, RestingStates, RuleStateRepository } from './state-repository.ts';

// A user clearing a rule's alert frees the rule to raise another (docs/rules.md, "Rule timing").
onAlertCleared(async (db, alert) => {
  if (alert.rule_key !== null && alert.thing_key !== null) {
    await forgetOpenAlert(db, alert.rule_key, alert.thing_key, alert.alert_key);
  }
});

/** Things per read (well under both engines' parameter limits). */
const CHUNK = 500;

export interface RuleEngineOptions {
  /** Told when deliveries were queued (the worker starts on them without waiting for its poll). */
  onQueued?: () => void;
  /** Told how many times rules fired in a transaction (for metrics). */
  onFired?: (count: number) => void;
}

/** The events of one organisation's batches with their things, in arrival order. */
function candidatesOf(batches: IngestBatch[]): Candidate[] {
  const candidates: Candidate[] = [];
  for (const batch of batches) {
    const things = batch.subject?.things;
    for (const event of batch.events) {
      const thing = things?.get(event.thingId);
      if (thing) {
        candidates.push({
          event,
          thingKey: thing.thing_key,
          templateKey: thing.thing_template_key,
          order: candidates.length,
        });
      }
    }
  }
  return candidates;
}

export class RuleEngine {
  private readonly ruleSets = new RuleSetCache();
  private readonly states = new RuleStateRepository();
  private readonly resting = new RestingStates();

  constructor(private readonly options: RuleEngineOptions = {}) {}

  /** Evaluates every event of a transaction's batches; run inside that transaction by the event writer. */
  async evaluate(tx: Tx, batches: readonly IngestBatch[]): Promise<void> {
    const byOrganisation = new Map<string, IngestBatch[]>();
    for (const batch of batches) {
      if (!batch.subject || batch.events.length === 0) continue;
      const list = byOrganisation.get(batch.subject.organisationKey) ?? [];
      list.push(batch);
      byOrganisation.set(batch.subject.organisationKey, list);
    }
    if (byOrganisation.size === 0) return;
    const revisions = await readRuleRevisions(tx, [...byOrganisation.keys()]);
    let queued = 0;
    const leftRest: string[] = [];
    for (const [organisationKey, ofOrganisation] of byOrganisation) {
      const revision = revisions.get(organisationKey) ?? { rules: '', states: '' };
      const rules = await this.ruleSets.rulesOf(tx, organisationKey, revision.rules);
      // Most organisations have no rules: their events are not looked at one by one.
      if (rules.length === 0) continue;
      const result = await this.evaluateOrganisation(
        tx,
        organisationKey,
        `${revision.rules}\u0000${revision.states}`,
        rules,
        candidatesOf(ofOrganisation),
      );
      queued += result.queued;
      if (result.leftRest) leftRest.push(organisationKey);
    }
    // Last, and in one order: each raise locks its counter until the transaction ends.
    for (const organisationKey of leftRest.sort()) await raiseRuleStateRevision(tx, organisationKey);
    if (queued > 0 && this.options.onQueued) setImmediate(this.options.onQueued);
  }

  /**
   * Evaluates one organisation's events and fires what they cause; answers how many deliveries were
   * queued, and whether a state left rest (`revision`: the organisation's revisions, as read).
   */
  private async evaluateOrganisation(
    tx: Tx,
    organisationKey: string,
    revision: string,
    rules: CompiledRule[],
    candidates: Candidate[],
  ): Promise<{ queued: number; leftRest: boolean }> {
    const things = new ThingCache(tx, organisationKey);
    if (rules.some((r) => r.needsThing)) await things.load(candidates.map((c) => c.thingKey));
    const verdicts = evaluate(rules, candidates, (thingKey) => things.loadedView(thingKey));
    const effects: Effect[] = verdicts.firings.map((firing) => ({ ...firing, kind: 'fire', pair: -1 }));
    // A state known at rest stays so through events on which its condition fails: nothing to read or write.
    const resting = this.resting.under(organisationKey, revision);
    const pairs = verdicts.pairs.filter((p) => p.held || p.rule.row.trigger === 'no_data' || !resting.has(p.key));
    const now = Date.now();
    const statePairs = pairs.map((p) => {
      const noData = p.rule.row.trigger === 'no_data';
      return {
        ruleKey: p.rule.row.rule_key,
        thingKey: p.thingKey,
        dueAt: noData ? now + p.rule.forMs : undefined,
        whole: noData || p.held,
      };
    });
    const stored = pairs.length === 0 ? [] : await this.states.lock(tx, organisationKey, statePairs, now);
    const entered = enter(pairs, stored);
    effects.push(...entered.effects);
    // In the order their events arrived (a stable sort: stateless firings of one event come first).
    if (entered.effects.length > 0) effects.sort((a, b) => a.candidate.order - b.candidate.order);
    const openAlerts = stored.map((state) => state.openAlertKey);
    let queued = 0;
    let fired = 0;
    for (const effect of effects) {
      if (effect.kind === 'clear') {
        const alertKey = openAlerts[effect.pair];
        if (alertKey) await clearAlertByRule(tx, organisationKey, alertKey, now);
        openAlerts[effect.pair] = null;
        continue;
      }
      const result = await fire(tx, organisationKey, effect, await things.row(effect.candidate.thingKey));
      queued += result.queued;
      fired++;
      if (effect.pair >= 0 && effect.rule.autoClear) openAlerts[effect.pair] = result.alertKey;
    }
    const changes = [];
    const learnt: string[] = [];
    const moved: string[] = [];
    let leftRest = false;
    for (let index = 0; index < pairs.length; index++) {
      const before = stored[index] as (typeof stored)[number];
      const after = entered.states[index] as (typeof entered.states)[number];
      const openAlertKey = openAlerts[index] ?? null;
      const pair = statePairs[index] as (typeof statePairs)[number];
      if (pair.dueAt === undefined) {
        const key = (pairs[index] as (typeof pairs)[number]).key;
        const restsAfter = atRest(after) && openAlertKey === null;
        if (atRest(before) && restsAfter) learnt.push(key);
        else moved.push(key);
        if (atRest(before) && !restsAfter) leftRest = true;
      }
      // A watch found unwatched (its thing had left the rule's scope) is armed again by the thing's event.
      const arm = pair.dueAt !== undefined && !before.watched;
      if (sameState(after, before) && openAlertKey === before.openAlertKey && !arm) continue;
      changes.push({ ...pair, ...after, openAlertKey, arm });
    }
    if (changes.length > 0) await this.states.save(tx, organisationKey, changes, now);
    this.resting.note(organisationKey, revision, learnt, moved);
    if (fired > 0) this.options.onFired?.(fired);
    return { queued, leftRest };
  }
}

/** Things read at most once per transaction, for `thing.<field>` conditions, groups and alerts. */
class ThingCache {
  private readonly rows = new Map<string, ThingWithTemplate | undefined>();
  private readonly views = new Map<string, ReturnType<typeof expressionViewOfThing> | undefined>();

  constructor(
    private readonly tx: Tx,
    private readonly organisationKey: string,
  ) {}

  /** Reads these things in one query (rather than one at a time as they are needed). */
  async load(thingKeys: string[]): Promise<void> {
    const wanted = [...new Set(thingKeys)].filter((k) => !this.rows.has(k));
    for (let i = 0; i < wanted.length; i += CHUNK) {
      const chunk = wanted.slice(i, i + CHUNK);
      const rows = await findThingsOfOrganisation(this.tx, this.organisationKey, chunk);
      for (const key of chunk) this.rows.set(key, undefined);
      for (const row of rows) this.rows.set(row.thing_key, row);
    }
  }

  async row(thingKey: string): Promise<ThingWithTemplate | undefined> {
    if (!this.rows.has(thingKey)) await this.load([thingKey]);
    return this.rows.get(thingKey);
  }

  /** A loaded thing as expressions read it (undefined when it is gone or was not loaded). */
  loadedView(thingKey: string) {
    if (!this.views.has(thingKey)) {
      const row = this.rows.get(thingKey);
      this.views.set(thingKey, row ? expressionViewOfThing(row, Date.now()) : undefined);
    }
    return this.views.get(thingKey);
  }
}
