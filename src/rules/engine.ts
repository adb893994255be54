/**
 * The rule engine (CONTRACT 8): every stored event is checked against its organisation's enabled rules
 * inside the transaction that stores it. A rule that fires raises its alert and queues each of its
 * notification actions in that same transaction, so an acknowledged event's consequences are as
 * durable as the event. `on_enter` rules fire when their condition turns true for a thing; that state
 * lives in the store (rule_states), so it survives restarts and is shared by every server instance.
 *
 * Each organisation's rules, with their notification actions and groups, are kept in memory under the
 * change revisions they were read under (audit/revisions.ts). Every transaction reads the revisions of
 * its organisations first, in one statement, and reads an organisation's rules again where they
 * differ: a change committed before the transaction, through any instance, applies to its events
 * (docs/rules.md, "How rules are evaluated").
 */
import { renderAlertMessage } from '../alerts/message.ts';
import { raiseAlert } from '../alerts/service.ts';
import { readRuleRevisions } from '../audit/revisions.ts';
import { queueDeliveries } from '../deliveries/service.ts';
import type { IngestBatch, NewEvent } from '../events/writer.ts';
import {
  compileMatcher,
  type Expression,
  type Matcher,
  parseRuleCondition,
  parseThingExpression,
  referencedNames,
  ruleConditionLookup,
  thingLookup,
} from '../expressions/index.ts';
import { lockRows } from '../store/dialect.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import type { NotificationActionRow, RuleRow } from '../store/tables.ts';
import { expressionViewOfThing } from '../things/presenter.ts';
import type { ThingWithTemplate } from '../things/repository.ts';
import { selectThings } from '../things/repository.ts';
import { thingSnapshot } from '../things/service.ts';

/** Rows per multi-row statement (well under both engines' parameter limits). */
const CHUNK = 500;
const MAX_KNOWN_STATES = 100_000;

interface CompiledRule {
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
  actions: NotificationActionRow[];
}

interface OrganisationRules {
  /** The organisation's change revisions the rules were read under (readRuleRevisions). */
  revision: string;
  rules: CompiledRule[];
}

export interface RuleEngineOptions {
  /** Told when deliveries were queued (the worker starts on them without waiting for its poll). */
  onQueued?: () => void;
}

/** One event of one thing, as a rule sees it. */
interface Candidate {
  event: NewEvent;
  thingKey: string;
  templateKey: string;
  /** Arrival order within the transaction. */
  order: number;
}

const candidateOrder = (candidate: Candidate) => candidate.order;

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

interface Firing {
  rule: CompiledRule;
  candidate: Candidate;
}

export class RuleEngine {
  private readonly cache = new Map<string, OrganisationRules>();
  /** (rule, thing) pairs whose state row is known to exist: their insert is skipped. */
  private readonly knownStates = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly options: RuleEngineOptions = {},
  ) {}

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
    for (const [organisationKey, ofOrganisation] of byOrganisation) {
      const rules = await this.rulesOf(tx, organisationKey, revisions.get(organisationKey) ?? '');
      // Most organisations have no rules: their events are not looked at one by one.
      if (rules.length === 0) continue;
      queued += await this.evaluateOrganisation(tx, organisationKey, rules, candidatesOf(ofOrganisation));
    }
    if (queued > 0 && this.options.onQueued) setImmediate(this.options.onQueued);
  }

  /** The organisation's rules, read again unless those in memory were read under `revision`. */
  private async rulesOf(db: Executor, organisationKey: string, revision: string): Promise<CompiledRule[]> {
    const cached = this.cache.get(organisationKey);
    if (cached && cached.revision === revision) return cached.rules;
    const rules = await loadRules(db, organisationKey);
    this.cache.set(organisationKey, { revision, rules });
    return rules;
  }

  private async evaluateOrganisation(
    tx: Tx,
    organisationKey: string,
    rules: CompiledRule[],
    candidates: Candidate[],
  ): Promise<number> {
    const things = new ThingCache(tx, organisationKey);
    const needsThing = rules.some((r) => r.needsThing);
    if (needsThing) await things.load(candidates.map((c) => c.thingKey));
    const firings: Firing[] = [];
    // on_enter rules: what decides each (rule, thing)'s firings from its stored state (StatePair), by
    // rule in the order of `rules`.
    const entering = rules.map(() => new Map<string, StatePair>());
    for (const candidate of candidates) {
      const thing = needsThing ? await things.view(candidate.thingKey) : undefined;
      const lookup = ruleConditionLookup(candidate.event.data, thing);
      for (let index = 0; index < rules.length; index++) {
        const rule = rules[index] as CompiledRule;
        if (!watches(rule, candidate, thing)) continue;
        const matched = rule.matches(lookup);
        if (rule.row.trigger === 'every_event') {
          if (matched) firings.push({ rule, candidate });
          continue;
        }
        const ofRule = entering[index] as Map<string, StatePair>;
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
    if (pairs.length > 0) firings.push(...(await this.transitions(tx, organisationKey, pairs)));
    let queued = 0;
    for (const firing of firings) queued += await fire(tx, organisationKey, firing, things);
    return queued;
  }

  /**
   * on_enter rules: walks each (rule, thing)'s verdicts from its stored state and fires at each change
   * to true. The state rows are created if missing and then locked (PostgreSQL), so two instances
   * handling the same thing at once take turns and fire once.
   */
  private async transitions(tx: Tx, organisationKey: string, pairs: StatePair[]): Promise<Firing[]> {
    // In key order, so concurrent transactions lock state rows in the same order.
    pairs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const now = Date.now();
    const missing = pairs.filter((p) => !this.knownStates.has(p.key));
    for (let i = 0; i < missing.length; i += CHUNK) {
      await tx
        .insertInto('rule_states')
        .values(
          missing.slice(i, i + CHUNK).map((p) => ({
            rule_key: p.rule.row.rule_key,
            thing_key: p.thingKey,
            organisation_key: organisationKey,
            matched: 0,
            updated_at: now,
          })),
        )
        .onConflict((oc) => oc.columns(['rule_key', 'thing_key']).doNothing())
        .execute();
    }
    const ruleKeys = [...new Set(pairs.map((p) => p.rule.row.rule_key))];
    const thingKeys = [...new Set(pairs.map((p) => p.thingKey))];
    const rows = await tx
      .selectFrom('rule_states')
      .select(['rule_key', 'thing_key', 'matched'])
      .where('rule_key', 'in', ruleKeys)
      .where('thing_key', 'in', thingKeys)
      .orderBy('rule_key')
      .orderBy('thing_key')
      .$call(lockRows(this.store.engine))
      .execute();
    const stored = new Map(rows.map((r) => [pairKey(r.rule_key, r.thing_key), r.matched === 1]));
    if (this.knownStates.size > MAX_KNOWN_STATES) this.knownStates.clear();
    const firings: Firing[] = [];
    for (const pair of pairs) {
      const before = stored.get(pair.key);
      if (before === undefined) {
        // Believed stored but not found (its insert was rolled back): inserted again next time.
        this.knownStates.delete(pair.key);
      } else {
        this.knownStates.add(pair.key);
      }
      // It fires where its condition turns true: at the first event if the stored state was false,
      // then at each rise between the transaction's own events.
      if (pair.firstMatched && !before) firings.push({ rule: pair.rule, candidate: pair.first });
      for (const candidate of pair.rising) firings.push({ rule: pair.rule, candidate });
      const state = pair.lastMatched;
      if (state === before) continue;
      await tx
        .insertInto('rule_states')
        .values({
          rule_key: pair.rule.row.rule_key,
          thing_key: pair.thingKey,
          organisation_key: organisationKey,
          matched: state ? 1 : 0,
          updated_at: now,
        })
        .onConflict((oc) =>
          oc.columns(['rule_key', 'thing_key']).doUpdateSet({ matched: state ? 1 : 0, updated_at: now }),
        )
        .execute();
    }
    // Firings in the order their events arrived.
    return firings.sort((a, b) => candidateOrder(a.candidate) - candidateOrder(b.candidate));
  }
}

const pairKey = (ruleKey: string, thingKey: string) => `${ruleKey}\u0000${thingKey}`;

/**
 * One rule and one thing with the rule's verdicts on the thing's events of a transaction, as much of
 * them as decides its firings: the first verdict (which fires if the stored state was false), every
 * later event where the verdict turns true, and the last verdict (the state to store).
 */
interface StatePair {
  key: string;
  rule: CompiledRule;
  thingKey: string;
  first: Candidate;
  firstMatched: boolean;
  rising: Candidate[];
  lastMatched: boolean;
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
      const rows = (await selectThings(this.tx)
        .where('t.organisation_key', '=', this.organisationKey)
        .where('t.thing_key', 'in', chunk)
        .execute()) as ThingWithTemplate[];
      for (const key of chunk) this.rows.set(key, undefined);
      for (const row of rows) this.rows.set(row.thing_key, row);
    }
  }

  async row(thingKey: string): Promise<ThingWithTemplate | undefined> {
    if (!this.rows.has(thingKey)) await this.load([thingKey]);
    return this.rows.get(thingKey);
  }

  async view(thingKey: string) {
    if (!this.views.has(thingKey)) {
      const row = await this.row(thingKey);
      this.views.set(thingKey, row ? expressionViewOfThing(row, Date.now()) : undefined);
    }
    return this.views.get(thingKey);
  }
}

/** Whether a rule watches the event's thing: its template, its listed things or its group (the union). */
function watches(rule: CompiledRule, candidate: Candidate, thing: object | undefined): boolean {
  if (rule.everyThing) return true;
  if (rule.row.thing_template_key !== null && rule.row.thing_template_key === candidate.templateKey) return true;
  if (rule.thingKeys.has(candidate.thingKey) || rule.groupMembers.has(candidate.thingKey)) return true;
  if (rule.inGroup && thing) return rule.inGroup(thingLookup(thing));
  return false;
}

async function loadRules(db: Executor, organisationKey: string): Promise<CompiledRule[]> {
  const rows = await db
    .selectFrom('rules')
    .selectAll()
    .where('organisation_key', '=', organisationKey)
    .where('enabled', '=', 1)
    .orderBy('created_at')
    .orderBy('rule_key')
    .execute();
  if (rows.length === 0) return [];
  const ruleKeys = rows.map((r) => r.rule_key);
  const actions = await db
    .selectFrom('notification_actions')
    .selectAll()
    .where('rule_key', 'in', ruleKeys)
    .orderBy('created_at')
    .orderBy('notification_action_key')
    .execute();
  const groupKeys = [...new Set(rows.flatMap((r) => (r.group_key ? [r.group_key] : [])))];
  const groups =
    groupKeys.length === 0
      ? []
      : await db
          .selectFrom('groups')
          .select(['group_key', 'thing_expression'])
          .where('group_key', 'in', groupKeys)
          .where('organisation_key', '=', organisationKey)
          .execute();
  const members =
    groupKeys.length === 0
      ? []
      : await db
          .selectFrom('group_things')
          .select(['group_key', 'thing_key'])
          .where('group_key', 'in', groupKeys)
          .execute();
  const compiled: CompiledRule[] = [];
  for (const row of rows) {
    let condition: Expression;
    try {
      condition = parseRuleCondition(row.condition);
    } catch {
      continue; // Conditions are checked when saved; one that no longer parses is skipped, not fatal.
    }
    const group = groups.find((g) => g.group_key === row.group_key);
    let groupExpression: Expression | undefined;
    if (group?.thing_expression) {
      try {
        groupExpression = parseThingExpression(group.thing_expression);
      } catch {
        groupExpression = undefined;
      }
    }
    const thingKeys = new Set(JSON.parse(row.thing_keys) as string[]);
    compiled.push({
      row,
      matches: compileMatcher(condition),
      needsThing: groupExpression !== undefined || referencedNames(condition).some((path) => path[0] === 'thing'),
      everyThing: row.thing_template_key === null && thingKeys.size === 0 && row.group_key === null,
      thingKeys,
      groupMembers: new Set(members.filter((m) => m.group_key === row.group_key).map((m) => m.thing_key)),
      inGroup: groupExpression && compileMatcher(groupExpression),
      actions: actions.filter((a) => a.rule_key === row.rule_key),
    });
  }
  return compiled;
}

/** Raises the rule's alert and queues its actions, in the event's transaction; answers how many were queued. */
async function fire(tx: Tx, organisationKey: string, firing: Firing, things: ThingCache): Promise<number> {
  const { rule, candidate } = firing;
  const thing = await things.row(candidate.thingKey);
  if (!thing) return 0;
  const snapshot = thingSnapshot(thing);
  const message =
    rule.row.alert_message.trim() === ''
      ? `${rule.row.name}: ${rule.row.condition} (${thing.name})`
      : renderAlertMessage(rule.row.alert_message, candidate.event.data, snapshot);
  const event = { timestamp: candidate.event.timestamp, data: candidate.event.data };
  const alert =
    rule.row.alert_type === null
      ? null
      : await raiseAlert(tx, {
          organisationKey,
          thing,
          alertType: rule.row.alert_type,
          message,
          timestamp: candidate.event.timestamp,
          ruleKey: rule.row.rule_key,
          data: { rule_key: rule.row.rule_key, rule_name: rule.row.name, event },
        });
  return queueDeliveries(tx, {
    organisationKey,
    ruleKey: rule.row.rule_key,
    actionKeys: rule.actions.map((action) => action.notification_action_key),
    payload: {
      rule: { rule_key: rule.row.rule_key, name: rule.row.name, alert_type: rule.row.alert_type },
      thing: snapshot,
      event,
      alert: alert
        ? {
            alert_key: alert.alert_key,
            alert_type: alert.alert_type,
            message: alert.message,
            timestamp: alert.timestamp,
          }
        : null,
      message,
    },
  });
}
