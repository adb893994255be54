/**
 * The state of `on_enter` rules (docs/rules.md, "How rules are evaluated"): per rule and thing, whether
 * the condition held at the thing's last event. The only code that reads or writes the rule_states
 * table. The state is kept in the store, so it survives a restart and is shared by every instance; on
 * PostgreSQL the rows are locked for the rest of the transaction that reads them, so two instances
 * storing events of one thing at once take turns and a rule fires once.
 */
import { engineOfDb, lockRows } from '../store/dialect.ts';
import type { Executor, Tx } from '../store/store.ts';

/** Rows per multi-row statement (well under both engines' parameter limits). */
const CHUNK = 500;
/** Pairs remembered as stored; past that, forgotten all at once. */
const MAX_KNOWN_STATES = 100_000;

export interface StatePair {
  ruleKey: string;
  thingKey: string;
}

const keyOf = (ruleKey: string, thingKey: string) => `${ruleKey}\u0000${thingKey}`;

/** The states of one instance's transactions; remembers which state rows exist, to skip their inserts. */
export class RuleStateRepository {
  /** (rule, thing) pairs whose state row is known to exist. */
  private readonly known = new Set<string>();

  /**
   * The stored state of each pair (`undefined` where none), in the order given. Rows missing are first
   * created (not matched), then every row is read and, on PostgreSQL, locked until the transaction
   * ends. Give the pairs in one order (by rule key, then thing key), so concurrent transactions lock
   * state rows in the same order.
   */
  async lock(
    tx: Tx,
    organisationKey: string,
    pairs: readonly StatePair[],
    now: number,
  ): Promise<(boolean | undefined)[]> {
    const missing = pairs.filter((p) => !this.known.has(keyOf(p.ruleKey, p.thingKey)));
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
          })),
        )
        .onConflict((oc) => oc.columns(['rule_key', 'thing_key']).doNothing())
        .execute();
    }
    const ruleKeys = [...new Set(pairs.map((p) => p.ruleKey))];
    const thingKeys = [...new Set(pairs.map((p) => p.thingKey))];
    const rows = await tx
      .selectFrom('rule_states')
      .select(['rule_key', 'thing_key', 'matched'])
      .where('rule_key', 'in', ruleKeys)
      .where('thing_key', 'in', thingKeys)
      .orderBy('rule_key')
      .orderBy('thing_key')
      .$call(lockRows(engineOfDb(tx)))
      .execute();
    const stored = new Map(rows.map((r) => [keyOf(r.rule_key, r.thing_key), r.matched === 1]));
    if (this.known.size > MAX_KNOWN_STATES) this.known.clear();
    return pairs.map((pair) => {
      const key = keyOf(pair.ruleKey, pair.thingKey);
      const state = stored.get(key);
      // Believed stored but not found (its insert was rolled back): inserted again next time.
      if (state === undefined) this.known.delete(key);
      else this.known.add(key);
      return state;
    });
  }

  /** Stores new states, in the order given. */
  async save(
    tx: Tx,
    organisationKey: string,
    changes: readonly (StatePair & { matched: boolean })[],
    now: number,
  ): Promise<void> {
    for (const change of changes) {
      const matched = change.matched ? 1 : 0;
      await tx
        .insertInto('rule_states')
        .values({
          rule_key: change.ruleKey,
          thing_key: change.thingKey,
          organisation_key: organisationKey,
          matched,
          fired: matched,
          updated_at: now,
        })
        .onConflict((oc) =>
          oc.columns(['rule_key', 'thing_key']).doUpdateSet({ matched, fired: matched, updated_at: now }),
        )
        .execute();
    }
  }
}

/** Forgets a rule's states (its condition or trigger changed, or it is deleted): its next match enters. */
export async function clearRuleStates(db: Executor, ruleKey: string): Promise<void> {
  await db.deleteFrom('rule_states').where('rule_key', '=', ruleKey).execute();
}
