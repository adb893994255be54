/**
 * The state of rules per thing (docs/rules.md, "How rules are evaluated" and "Rule timing"): whether
 * the condition held at the thing's last event, the run it has held on, the alert an `auto_clear` rule
 * keeps open, and when a `no_data` rule next checks the thing's silence. The only code that reads or
 * writes the rule_states table. The state is kept in the store, so it survives a restart and is shared
 * by every instance; on PostgreSQL the rows are locked for the rest of the transaction that reads
 * them, so two instances storing events of one thing at once take turns and a rule fires once.
 *
 * Most events leave most states at rest (the condition did not hold, no run, no alert kept open):
 * a state at rest and a missing row mean the same, so a pair whose condition held at none of its
 * events has no row made for it, and only a row that is not at rest is read and locked. Reading every
 * pair's row whatever it held cost bulk ingestion a fifth of its throughput with ten rules
 * (docs/benchmarks.md, "ingest").
 */
import { engineOfDb, lockRows, RowsStatement } from '../store/dialect.ts';
import type { Executor, Tx } from '../store/store.ts';

/** A rule's state for a thing, as stored (docs/rules.md, "Rule timing"). */
export interface RuleState {
  /** Whether the condition held at the thing's last event. */
  matched: boolean;
  /** Event time (ms) of the first event of the run the condition has held on. */
  runStartedAt: number | null;
  /** Whether the rule fired in that run. */
  fired: boolean;
  /** Whether the rule keeps an alert open for the thing (auto_clear). */
  openAlert: boolean;
}

export const FRESH_STATE: Readonly<RuleState> = { matched: false, runStartedAt: null, fired: false, openAlert: false };

/** Rows per multi-row statement (well under both engines' parameter limits). */
const CHUNK = 500;
/** Pairs remembered as stored; past that, forgotten all at once. */
const MAX_KNOWN_STATES = 100_000;

export interface StatePair {
  ruleKey: string;
  thingKey: string;
  /** no_data rules: when a watch armed now is first due (ms). */
  dueAt?: number | undefined;
  /**
   * Whether the rule's condition held at one of the pair's events, or it is a no_data watch: its row
   * is then made if missing, and read and locked whatever it holds.
   */
  whole: boolean;
}

/** A stored state with the key of the alert it keeps open. */
export interface StoredState extends RuleState {
  openAlertKey: string | null;
  /** no_data rules: whether the thing is watched (a due time is set). */
  watched: boolean;
}

const AT_REST: Readonly<StoredState> = { ...FRESH_STATE, openAlertKey: null, watched: false };

/** A (rule, thing) pair's key, as the evaluator's pairs have it. */
export const keyOf = (ruleKey: string, thingKey: string) => `${ruleKey}\u0000${thingKey}`;

interface StateRow {
  rule_key: string;
  thing_key: string;
  matched: number;
  run_started_at: number | string | null;
  fired: number;
  open_alert_key: string | null;
  due_at: number | string | null;
}

/**
 * The rows of the pairs given (rule, thing, whole) that are not at rest, and of whole pairs any row,
 * by rule and thing; one statement compiled once, whatever the number of pairs (store/dialect.ts,
 * RowsStatement), as it runs in every transaction of the event writer with rules.
 */
const readStates = (lock: string) =>
  new RowsStatement(
    ['text', 'text', 'bigint'],
    () => `select s.rule_key, s.thing_key, s.matched, s.run_started_at, s.fired, s.open_alert_key, s.due_at
      from v cross join rule_states s
      where s.rule_key = v.column1 and s.thing_key = v.column2
        and (v.column3 = 1 or s.matched <> 0 or s.fired <> 0 or s.run_started_at is not null
          or s.open_alert_key is not null)
      order by s.rule_key, s.thing_key ${lock}`,
  );
const read = readStates('');
const readLocked = readStates('for update of s');

/** (rule, thing) keys known at rest, all organisations together; past that, forgotten all at once. */
const MAX_RESTING = 200_000;

/**
 * The states an instance knows to be at rest, per organisation, under the revisions of its rules and
 * of its states leaving rest (audit/revisions.ts, read in each transaction before the states): while
 * both stay the same, no state it knows at rest has left rest, through whichever instance. An
 * event on which a rule's condition fails leaves such a state as it is, so the transaction neither
 * reads nor locks its row. What is learnt is what a transaction read at rest and left at rest, which a
 * rollback does not undo. `no_data` watches are never taken as known (an event may re-arm them).
 */
export class RestingStates {
  private readonly known = new Map<string, { revision: string; keys: Set<string> }>();
  private count = 0;

  /** The keys known at rest in the organisation under `revision` (what was known under another is forgotten). */
  under(organisationKey: string, revision: string): ReadonlySet<string> {
    const entry = this.known.get(organisationKey);
    if (entry && entry.revision === revision) return entry.keys;
    if (entry) this.count -= entry.keys.size;
    const keys = new Set<string>();
    this.known.set(organisationKey, { revision, keys });
    return keys;
  }

  /** Learns keys at rest and forgets keys that left it, if the organisation is still known under `revision`. */
  note(organisationKey: string, revision: string, resting: readonly string[], moving: readonly string[]): void {
    const entry = this.known.get(organisationKey);
    if (!entry || entry.revision !== revision) return;
    for (const key of moving) if (entry.keys.delete(key)) this.count--;
    if (this.count + resting.length > MAX_RESTING) {
      this.known.clear();
      this.count = 0;
      return;
    }
    for (const key of resting) {
      if (entry.keys.has(key)) continue;
      entry.keys.add(key);
      this.count++;
    }
  }
}

/** The states of one instance's transactions; remembers which state rows exist, to skip their inserts. */
export class RuleStateRepository {
  /** (rule, thing) pairs whose state row is known to exist. */
  private readonly known = new Set<string>();

  /**
   * The stored state of each pair, in the order given. A whole pair's row is first made if missing
   * (at rest; a no_data watch armed), then read; of the other pairs only rows not at rest are read
   * (the others are at rest). On PostgreSQL the rows read are locked until the transaction ends. Give
   * the pairs in one order (by rule key, then thing key), so concurrent transactions lock state rows
   * in the same order.
   */
  async lock(tx: Tx, organisationKey: string, pairs: readonly StatePair[], now: number): Promise<StoredState[]> {
    const whole = pairs.filter((p) => p.whole);
    const missing = whole.filter((p) => !this.known.has(keyOf(p.ruleKey, p.thingKey)));
    for (let i = 0; i < missing.length; i += CHUNK) {
      await tx
        .insertInto('rule_states')
        .values(
          missing.slice(i, i + CHUNK).map((p) => ({
            rule_key: p.ruleKey,
            thing_key: p.thingKey,
            organisation_key: organisationKey,
            matched: 0,
            fired: 0,
            updated_at: now,
            due_at: p.dueAt ?? null,
            watched_since: p.dueAt === undefined ? null : now,
          })),
        )
        .onConflict((oc) => oc.columns(['rule_key', 'thing_key']).doNothing())
        .execute();
    }
    const lockOn = engineOfDb(tx) === 'postgres' ? readLocked : read;
    const rows = await lockOn.run<StateRow>(tx, [
      pairs.map((p) => p.ruleKey),
      pairs.map((p) => p.thingKey),
      pairs.map((p) => (p.whole ? 1 : 0)),
    ]);
    // Mostly no row is read: every pair is at rest.
    if (rows.length === 0 && whole.length === 0) return pairs.map(() => AT_REST);
    const stored = new Map<string, StoredState>(
      rows.map((r) => [
        keyOf(r.rule_key, r.thing_key),
        {
          matched: Number(r.matched) === 1,
          runStartedAt: r.run_started_at === null ? null : Number(r.run_started_at),
          fired: Number(r.fired) === 1,
          openAlert: r.open_alert_key !== null,
          openAlertKey: r.open_alert_key,
          watched: r.due_at !== null,
        },
      ]),
    );
    if (this.known.size > MAX_KNOWN_STATES) this.known.clear();
    return pairs.map((pair) => {
      const key = keyOf(pair.ruleKey, pair.thingKey);
      const state = stored.get(key);
      if (!pair.whole) return state ?? AT_REST;
      // Believed stored but not found (its insert was rolled back): inserted again next time, and
      // taken as fresh now.
      if (state === undefined) this.known.delete(key);
      else this.known.add(key);
      return state ?? AT_REST;
    });
  }

  /**
   * Stores new states, in the order given; `arm` watches the thing again from now (a no_data watch
   * found unwatched: its thing sent an event in the rule's scope).
   */
  async save(
    tx: Tx,
    organisationKey: string,
    changes: readonly (StatePair & RuleState & { openAlertKey: string | null; arm: boolean })[],
    now: number,
  ) {
    for (const change of changes) {
      const columns = {
        matched: change.matched ? 1 : 0,
        run_started_at: change.runStartedAt,
        fired: change.fired ? 1 : 0,
        open_alert_key: change.openAlertKey,
        updated_at: now,
        ...(change.arm && change.dueAt !== undefined ? { due_at: change.dueAt, watched_since: now } : {}),
      };
      await tx
        .insertInto('rule_states')
        .values({ rule_key: change.ruleKey, thing_key: change.thingKey, organisation_key: organisationKey, ...columns })
        .onConflict((oc) => oc.columns(['rule_key', 'thing_key']).doUpdateSet(columns))
        .execute();
    }
  }
}

/**
 * Starts a rule's states over (its condition, trigger, timing or scope changed): the next matching
 * event starts a new run. The alerts it keeps open stay linked, so that it still clears them, unless
 * `forgetOpenAlerts` (auto_clear turned off: they are left to users).
 */
export async function resetRuleStates(db: Executor, ruleKey: string, forgetOpenAlerts: boolean): Promise<void> {
  await db
    .updateTable('rule_states')
    .set({
      matched: 0,
      run_started_at: null,
      fired: 0,
      ...(forgetOpenAlerts ? { open_alert_key: null } : {}),
    })
    .where('rule_key', '=', ruleKey)
    .execute();
}

/** Forgets a rule's states (it is deleted). */
export async function clearRuleStates(db: Executor, ruleKey: string): Promise<void> {
  await db.deleteFrom('rule_states').where('rule_key', '=', ruleKey).execute();
}

/** A user cleared an alert a rule kept open: the rule keeps it no longer, and may raise another. */
export async function forgetOpenAlert(db: Executor, ruleKey: string, thingKey: string, alertKey: string) {
  await db
    .updateTable('rule_states')
    .set({ open_alert_key: null })
    .where('rule_key', '=', ruleKey)
    .where('thing_key', '=', thingKey)
    .where('open_alert_key', '=', alertKey)
    .execute();
}

/** A no_data rule's watch of a thing that is due (docs/rules.md, "Rule timing"). */
export interface DueSilence {
  rule_key: string;
  thing_key: string;
  organisation_key: string;
  /** When the watch began (ms; 0 for a row that never had one). */
  watched_since: number;
  fired_silence: number | null;
  open_alert_key: string | null;
}

/**
 * Up to `limit` watches due by `now`, earliest first, locked until the transaction ends; on
 * PostgreSQL those another instance holds are passed over, so each is checked by one instance.
 */
export async function claimDueSilences(tx: Tx, now: number, limit: number): Promise<DueSilence[]> {
  const rows = await tx
    .selectFrom('rule_states')
    .select(['rule_key', 'thing_key', 'organisation_key', 'watched_since', 'fired_silence', 'open_alert_key'])
    .where('due_at', '<=', now)
    .orderBy('due_at')
    .limit(limit)
    .$call(lockRows(engineOfDb(tx), { skipLocked: true }))
    .execute();
  return rows.map((r) => ({
    ...r,
    watched_since: Number(r.watched_since),
    fired_silence: r.fired_silence === null ? null : Number(r.fired_silence),
  }));
}

/** What checking a watch decided: when it is next due (null: not watched), and what it fired for. */
export async function saveSilence(
  db: Executor,
  ruleKey: string,
  thingKey: string,
  changes: { due_at: number | null; fired_silence?: number; open_alert_key?: string | null },
): Promise<void> {
  await db
    .updateTable('rule_states')
    .set(changes)
    .where('rule_key', '=', ruleKey)
    .where('thing_key', '=', thingKey)
    .execute();
}

/** Forgets a watch whose thing is gone. */
export async function deleteState(db: Executor, ruleKey: string, thingKey: string): Promise<void> {
  await db.deleteFrom('rule_states').where('rule_key', '=', ruleKey).where('thing_key', '=', thingKey).execute();
}

/** The due times of a rule's watches of these things (all its watches when `thingKeys` is undefined), by thing. */
export async function watchesOf(
  db: Executor,
  ruleKey: string,
  thingKeys: readonly string[] | undefined,
): Promise<Map<string, number | null>> {
  const watches = new Map<string, number | null>();
  const read = async (keys: readonly string[] | undefined) => {
    let query = db.selectFrom('rule_states').select(['thing_key', 'due_at']).where('rule_key', '=', ruleKey);
    if (keys) query = query.where('thing_key', 'in', keys);
    for (const row of await query.execute()) {
      watches.set(row.thing_key, row.due_at === null ? null : Number(row.due_at));
    }
  };
  if (thingKeys === undefined) await read(undefined);
  else for (let i = 0; i < thingKeys.length; i += CHUNK) await read(thingKeys.slice(i, i + CHUNK));
  return watches;
}

/** Stops a rule's watches of these things (they left its scope). */
export async function unwatchThings(db: Executor, ruleKey: string, thingKeys: readonly string[]): Promise<void> {
  for (let i = 0; i < thingKeys.length; i += CHUNK) {
    await db
      .updateTable('rule_states')
      .set({ due_at: null })
      .where('rule_key', '=', ruleKey)
      .where('thing_key', 'in', thingKeys.slice(i, i + CHUNK))
      .execute();
  }
}

/** Stops every watch of a rule (it is no longer an enabled no_data rule). */
export async function unwatchRule(db: Executor, ruleKey: string): Promise<void> {
  await db.updateTable('rule_states').set({ due_at: null }).where('rule_key', '=', ruleKey).execute();
}

/**
 * Watches these things for a rule from `now`: each is due `forMs` after the latest of `now`, its
 * creation and its last event. A thing already watched keeps what the rule fired for and the alert it
 * keeps open.
 */
export async function watchThings(
  db: Executor,
  organisationKey: string,
  ruleKey: string,
  watches: readonly { thingKey: string; dueAt: number }[],
  now: number,
): Promise<void> {
  for (let i = 0; i < watches.length; i += CHUNK) {
    await db
      .insertInto('rule_states')
      .values(
        watches.slice(i, i + CHUNK).map((w) => ({
          rule_key: ruleKey,
          thing_key: w.thingKey,
          organisation_key: organisationKey,
          matched: 0,
          fired: 0,
          updated_at: now,
          due_at: w.dueAt,
          watched_since: now,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['rule_key', 'thing_key']).doUpdateSet((eb) => ({
          due_at: eb.ref('excluded.due_at'),
          watched_since: eb.ref('excluded.watched_since'),
        })),
      )
      .execute();
  }
}
