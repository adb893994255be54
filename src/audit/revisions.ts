/**
 * Change revisions: a counter per organisation and entity type, raised inside the transaction of each
 * recorded change of that type. Whoever reads the counters before reading the entities knows that
 * what it read is at least as new as the counters say; while they stay the same, nothing of that type
 * changed in those organisations, whichever instance made the change. Kept only for the types listed
 * here: each raise makes concurrent changes of one organisation's entities of that type take turns.
 */
import { sql } from 'kysely';
import type { EntityType } from '../core/change-feed.ts';
import { RowsStatement } from '../store/dialect.ts';
import { compiledQuery } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';

/**
 * What the rule engine caches per organisation (rules/engine.ts): rules, their notification actions
 * and their groups (a static group's members, a dynamic group's expression).
 */
export const RULE_ENTITY_TYPES: readonly EntityType[] = ['Rule', 'NotificationAction', 'Group'];

/**
 * Entity types whose every change raises a revision: those the rule engine keeps. Caches that may
 * trail a change made through another instance by the time its notice takes follow the change feed
 * instead (core/change-feed.ts); the rule engine must not, so it reads these in its transaction.
 */
export const REVISED_ENTITY_TYPES: ReadonlySet<EntityType> = new Set<EntityType>(RULE_ENTITY_TYPES);

/**
 * The revisions a recorded change of `entityType` raises. A thing made, changed or deleted may join
 * or leave groups (a static group loses a deleted thing; a thing made again with its key is not a
 * member): its organisation's Group revision is raised whatever changed, so no change that affects
 * what a rule watches can miss the rule engine.
 */
export function revisionsRaisedBy(entityType: EntityType): readonly EntityType[] {
  if (entityType === 'Thing') return ['Group'];
  return REVISED_ENTITY_TYPES.has(entityType) ? [entityType] : [];
}

const raise = compiledQuery((db: Executor, organisationKey: string, entityType: string) =>
  db
    .insertInto('change_revisions')
    .values({ organisation_key: organisationKey, entity_type: entityType, revision: 1 })
    .onConflict((conflict) =>
      conflict
        .columns(['organisation_key', 'entity_type'])
        .doUpdateSet({ revision: sql<number>`change_revisions.revision + 1` }),
    ),
);

/** Raises the revision of `entityType` in an organisation; call inside the changing transaction. */
export async function raiseRevision(db: Executor, organisationKey: string, entityType: EntityType): Promise<void> {
  await raise.execute(db, organisationKey, entityType);
}

/**
 * Not an entity type: the counter the rule engine raises when a rule's state for a thing leaves rest
 * (rules/state-repository.ts), so that every instance knows which states it may take as at rest.
 */
const RULE_STATES = 'RuleState';

const ruleRevisions = new RowsStatement(
  ['text'],
  () => `select r.organisation_key, r.entity_type, r.revision from change_revisions r
    join v on r.organisation_key = v.column1
    where r.entity_type in (${[...RULE_ENTITY_TYPES, RULE_STATES].map((t) => `'${t}'`).join(', ')})`,
);

/** An organisation's revisions for the rule engine: equal texts mean no change in between. */
export interface RuleRevisions {
  /** Of RULE_ENTITY_TYPES. */
  rules: string;
  /** Of the rules' states leaving rest. */
  states: string;
}

/**
 * The revisions of RULE_ENTITY_TYPES, and of the rules' states, in each of the given organisations,
 * in one statement whatever the number of organisations. Read it before reading the entities, in
 * the transaction that uses them.
 */
export async function readRuleRevisions(
  db: Executor,
  organisationKeys: readonly string[],
): Promise<Map<string, RuleRevisions>> {
  const rows = await ruleRevisions.run<{ organisation_key: string; entity_type: string; revision: number | string }>(
    db,
    [organisationKeys],
  );
  const parts = new Map<string, string[]>();
  const states = new Map<string, string>();
  for (const row of rows) {
    if (row.entity_type === RULE_STATES) {
      states.set(row.organisation_key, String(row.revision));
      continue;
    }
    const list = parts.get(row.organisation_key) ?? [];
    list.push(`${row.entity_type}=${row.revision}`);
    parts.set(row.organisation_key, list);
  }
  const revisions = new Map<string, RuleRevisions>();
  for (const key of organisationKeys) {
    revisions.set(key, { rules: (parts.get(key) ?? []).sort().join(';'), states: states.get(key) ?? '' });
  }
  return revisions;
}

/**
 * Raises the revision of an organisation's rule states (one left rest); call inside the changing
 * transaction, after its last lock on rule states: the counter's row is locked until it ends.
 */
export async function raiseRuleStateRevision(db: Executor, organisationKey: string): Promise<void> {
  await raise.execute(db, organisationKey, RULE_STATES);
}
