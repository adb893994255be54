/**
 * `no_data` rules (docs/rules.md, "Rule timing"): a rule fires for a watched thing that has sent no
 * event for `for_seconds`, by the server's clock, once per silence. A timer fires it, not an event:
 * each (rule, thing) watch has a due time in its state row, and the timer claims the watches that are
 * due (on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so each is checked by one instance), compares the
 * thing's last event time, which the event writer keeps anyway, with the due time, and either fires
 * or sets the next due time. An event never moves a due time (the rule engine reads the watch only to
 * clear the rule's open alert, or to watch again a thing in scope that is not watched); a thing that
 * keeps sending is looked at once per `for_seconds`, and the work of a tick is the watches that came
 * due in it, not every thing watched. Watches follow the rules' scopes as rules, things and groups
 * change, in the changing transaction.
 */

import { ruleConditionLookup } from '../expressions/index.ts';
import { onGroupChanged } from '../groups/service.ts';
import { DEFAULT_BACKGROUND_STATEMENT_MS, withStatementTimeout } from '../store/faults.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import type { RuleRow } from '../store/tables.ts';
import { expressionViewOfThing } from '../things/presenter.ts';
import {
  findThingsOfOrganisation,
  onThingsChanged,
  onThingsCreated,
  type ThingWithTemplate,
  thingsOfOrganisation,
} from '../things/service.ts';
import { type Candidate, watches } from './evaluator.ts';
import { fire } from './firing.ts';
import { findRulesByKeys, listSilenceRules } from './repository.ts';
import { type CompiledRule, compileRules } from './rule-set.ts';
import { onRuleSaved } from './service.ts';
import {
  claimDueSilences,
  type DueSilence,
  deleteState,
  saveSilence,
  unwatchRule,
  unwatchThings,
  watchesOf,
  watchThings,
} from './state-repository.ts';

/** Watches checked per transaction. */
const BATCH = 500;
/** Transactions per tick at most: the rest waits for the next tick. */
const MAX_BATCHES_PER_TICK = 20;

const isWatching = (row: RuleRow | undefined): boolean =>
  row !== undefined && row.trigger === 'no_data' && row.enabled === 1;

/** What fields of a no_data rule decide which things it watches and when: a change re-arms its watches. */
const ARMING = ['for_seconds', 'thing_template_key', 'thing_keys', 'group_key', 'trigger', 'enabled'] as const;

/** A thing as a rule's scope sees it, with its last event (or an empty one at `now`). */
function candidateOf(thing: ThingWithTemplate, now: number, order = 0): Candidate {
  const last = thing.last_event ? (JSON.parse(thing.last_event) as Candidate['event']) : undefined;
  return {
    event: last ?? { timestamp: now, data: {} },
    thingKey: thing.thing_key,
    templateKey: thing.thing_template_key,
    order,
  };
}

/** When the thing's current silence began: its last event, or when the watch or the thing began. */
function silenceStart(thing: ThingWithTemplate, watchedSince: number): number {
  return Math.max(Number(thing.last_event_at ?? 0), Number(thing.created_at), watchedSince);
}

/** The things of `candidates` a compiled rule watches now. */
function watchedBy(rule: CompiledRule, things: readonly ThingWithTemplate[], now: number) {
  return things.filter((thing) => watches(rule, candidateOf(thing, now), expressionViewOfThing(thing, now)));
}

/**
 * Called in the transaction that creates or updates a rule: an enabled no_data rule watches every
 * thing in its scope from now (again after a change of its scope, timing or trigger, or when it is
 * enabled again); a rule that stops being one stops watching.
 */
export async function armSilences(tx: Tx, after: RuleRow, before: RuleRow | undefined, now: number): Promise<void> {
  if (!isWatching(after)) {
    if (isWatching(before)) await unwatchRule(tx, after.rule_key);
    return;
  }
  if (before && isWatching(before) && ARMING.every((field) => before[field] === after[field])) return;
  await unwatchRule(tx, after.rule_key);
  const all = await thingsOfOrganisation(tx, after.organisation_key);
  for (const rule of await compileRules(tx, after.organisation_key, [after])) {
    await watchThings(
      tx,
      after.organisation_key,
      after.rule_key,
      watchedBy(rule, all, now).map((thing) => ({
        thingKey: thing.thing_key,
        dueAt: silenceStart(thing, now) + rule.forMs,
      })),
      now,
    );
  }
}

/**
 * Called in the transaction that creates things: the organisation's no_data rules that watch them
 * start watching them now (a thing that never sends anything is silent from its creation).
 */
export async function armNewThings(db: Executor, organisationKey: string, thingKeys: readonly string[], now: number) {
  const rows = await listSilenceRules(db, organisationKey);
  if (rows.length === 0 || thingKeys.length === 0) return;
  const rules = await compileRules(db, organisationKey, rows);
  const things = await findThingsOfOrganisation(db, organisationKey, thingKeys);
  for (const rule of rules) {
    const watched = watchedBy(rule, things, now);
    await watchThings(
      db,
      organisationKey,
      rule.row.rule_key,
      watched.map((thing) => ({ thingKey: thing.thing_key, dueAt: silenceStart(thing, now) + rule.forMs })),
      now,
    );
  }
}

/**
 * Makes a no_data rule's watches of `things` follow its scope from `now`: a thing in scope that is
 * not watched is watched from now, and a watched thing out of scope is watched no more. `every`: the
 * things are all the organisation's, and a watch of a thing not among them is left to the timer.
 */
async function followScope(
  db: Executor,
  organisationKey: string,
  rule: CompiledRule,
  things: readonly ThingWithTemplate[],
  every: boolean,
  now: number,
): Promise<void> {
  const watches = await watchesOf(db, rule.row.rule_key, every ? undefined : things.map((t) => t.thing_key));
  const inScope = new Set(watchedBy(rule, things, now).map((t) => t.thing_key));
  const watched = (thing: ThingWithTemplate) => (watches.get(thing.thing_key) ?? null) !== null;
  await watchThings(
    db,
    organisationKey,
    rule.row.rule_key,
    things
      .filter((t) => inScope.has(t.thing_key) && !watched(t))
      .map((t) => ({ thingKey: t.thing_key, dueAt: silenceStart(t, now) + rule.forMs })),
    now,
  );
  await unwatchThings(
    db,
    rule.row.rule_key,
    things.filter((t) => !inScope.has(t.thing_key) && watched(t)).map((t) => t.thing_key),
  );
}

/**
 * Called in the transaction that changes things (their template, their fields, which a dynamic
 * group's expression reads): each no_data rule of the organisation follows its scope for them.
 */
export async function followChangedThings(
  db: Executor,
  organisationKey: string,
  thingKeys: readonly string[],
  now: number,
): Promise<void> {
  const rows = await listSilenceRules(db, organisationKey);
  if (rows.length === 0 || thingKeys.length === 0) return;
  const rules = await compileRules(db, organisationKey, rows);
  for (let i = 0; i < thingKeys.length; i += BATCH) {
    const things = await findThingsOfOrganisation(db, organisationKey, thingKeys.slice(i, i + BATCH));
    for (const rule of rules) await followScope(db, organisationKey, rule, things, false, now);
  }
}

/**
 * Called in the transaction that changes a group's members or expression, or deletes it: the
 * no_data rules watching the group follow their scope over every thing of the organisation.
 */
export async function followChangedGroup(db: Executor, organisationKey: string, groupKey: string, now: number) {
  const rows = (await listSilenceRules(db, organisationKey)).filter((r) => r.group_key === groupKey);
  if (rows.length === 0) return;
  const things = await thingsOfOrganisation(db, organisationKey);
  for (const rule of await compileRules(db, organisationKey, rows)) {
    await followScope(db, organisationKey, rule, things, true, now);
  }
}

onThingsCreated(armNewThings);
onThingsChanged(followChangedThings);
onGroupChanged(followChangedGroup);
onRuleSaved(armSilences);

/** Checks one due watch and fires its rule when the thing's silence has lasted; answers deliveries queued. */
async function checkSilence(
  tx: Tx,
  due: DueSilence,
  rule: CompiledRule | undefined,
  thing: ThingWithTemplate | undefined,
  now: number,
): Promise<{ queued: number; fired: boolean }> {
  const nothing = { queued: 0, fired: false };
  if (!thing) {
    await deleteState(tx, due.rule_key, due.thing_key);
    return nothing;
  }
  const candidate = candidateOf(thing, now);
  const view = expressionViewOfThing(thing, now);
  if (!rule || !watches(rule, candidate, view)) {
    await saveSilence(tx, due.rule_key, due.thing_key, { due_at: null });
    return nothing;
  }
  const start = silenceStart(thing, due.watched_since);
  if (now < start + rule.forMs) {
    await saveSilence(tx, due.rule_key, due.thing_key, { due_at: start + rule.forMs });
    return nothing;
  }
  // Fired for this silence already, or the condition does not hold on the last event: looked at again
  // one period later (an event meanwhile starts a new silence).
  const next = now + rule.forMs;
  if (due.fired_silence === start || !rule.matches(ruleConditionLookup(candidate.event.data, view))) {
    await saveSilence(tx, due.rule_key, due.thing_key, { due_at: next });
    return nothing;
  }
  if (rule.autoClear && due.open_alert_key !== null) {
    await saveSilence(tx, due.rule_key, due.thing_key, { due_at: next, fired_silence: start });
    return nothing;
  }
  const result = await fire(tx, thing.organisation_key, { rule, candidate }, thing, now);
  await saveSilence(tx, due.rule_key, due.thing_key, {
    due_at: next,
    fired_silence: start,
    ...(rule.autoClear ? { open_alert_key: result.alertKey } : {}),
  });
  return { queued: result.queued, fired: true };
}

export interface SilenceWatcherOptions {
  /** How often due watches are looked for (ms). */
  intervalMs: number;
  onQueued?: () => void;
  onFired?: (count: number) => void;
  onError?: (error: unknown) => void;
  /**
   * How long each statement of a check may wait for the database (ms; 0: no bound). A database that
   * hangs so fails the check, which is tried again at the next interval.
   */
  statementTimeoutMs?: number;
}

/** The timer of no_data rules: every interval, claims the watches that are due and checks them. */
export class SilenceWatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly options: SilenceWatcherOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running || this.stopped) return;
      this.running = withStatementTimeout(this.options.statementTimeoutMs ?? DEFAULT_BACKGROUND_STATEMENT_MS, () =>
        this.tick(),
      )
        .catch((error) => this.options.onError?.(error))
        .finally(() => {
          this.running = undefined;
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** Checks what is due by `now`; answers how many watches were checked. */
  async tick(now = Date.now()): Promise<number> {
    let checked = 0;
    for (let batch = 0; batch < MAX_BATCHES_PER_TICK && !this.stopped; batch++) {
      const { count, queued, fired } = await this.store.transaction((tx) => this.checkBatch(tx, now));
      checked += count;
      if (queued > 0) this.options.onQueued?.();
      if (fired > 0) this.options.onFired?.(fired);
      if (count < BATCH) break;
    }
    return checked;
  }

  private async checkBatch(tx: Tx, now: number) {
    const due = await claimDueSilences(tx, now, BATCH);
    let queued = 0;
    let fired = 0;
    const byOrganisation = new Map<string, DueSilence[]>();
    for (const d of due) byOrganisation.set(d.organisation_key, [...(byOrganisation.get(d.organisation_key) ?? []), d]);
    for (const [organisationKey, ofOrganisation] of byOrganisation) {
      const ruleKeys = [...new Set(ofOrganisation.map((d) => d.rule_key))];
      const rules = await compileRules(tx, organisationKey, (await findRulesByKeys(tx, ruleKeys)).filter(isWatching));
      const ruleByKey = new Map(rules.map((r) => [r.row.rule_key, r]));
      const things = await findThingsOfOrganisation(tx, organisationKey, [
        ...new Set(ofOrganisation.map((d) => d.thing_key)),
      ]);
      const thingByKey = new Map(things.map((t) => [t.thing_key, t]));
      for (const d of ofOrganisation) {
        const result = await checkSilence(tx, d, ruleByKey.get(d.rule_key), thingByKey.get(d.thing_key), now);
        queued += result.queued;
        if (result.fired) fired++;
      }
    }
    return { count: due.length, queued, fired };
  }
}
