/**
 * Change revisions: a counter per organisation and entity type, raised inside the transaction of each
 * recorded change of that type. Whoever reads the counters before reading the entities knows that
 * what it read is at least as new as the counters say; while they stay the same, nothing of that type
 * changed in those organisations, whichever instance made the change. Kept only for the types listed
 * here: each raise makes concurrent changes of one organisation's entities of that type take turns.
 */
import { sql } from 'kysely';
import { RowsStatement } from '../store/dialect.ts';
import { compiledQuery, QueryCache } from '../store/prepared.ts';
import type { Executor, Store } from '../store/store.ts';
import type { EntityType } from './entity-types.ts';

/**
 * What the rule engine caches per organisation (rules/engine.ts): rules, their notification actions
 * and their groups (a static group's members, a dynamic group's expression).
 */
export const RULE_ENTITY_TYPES: readonly EntityType[] = ['Rule', 'NotificationAction', 'Group'];

/**
 * Entity types whose every change is recorded (audited) and kept in memory somewhere: Role lists are
 * served from memory, and the rule engine keeps the rule types.
 */
export const REVISED_ENTITY_TYPES: ReadonlySet<EntityType> = new Set<EntityType>(['Role', ...RULE_ENTITY_TYPES]);

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

type RevisionRow = { organisation_key: string; revision: number };

/** One organisation's revision: the read of nearly every request of a cached list. */
const readOne = compiledQuery((db: Executor, organisationKey: string, entityType: string) =>
  db
    .selectFrom('change_revisions')
    .select(['organisation_key', 'revision'])
    .where('entity_type', '=', entityType)
    .where('organisation_key', '=', organisationKey),
);

/** Several organisations' revisions (an OEM organisation with its children). */
const readMany = new QueryCache();

/**
 * The revisions of `entityType` in the given organisations, as one text: equal texts mean no change
 * in between. Read it before reading the entities. Read on every request of a cached list, so it is
 * read at once where the store can (see Store.readNow) and answered without a promise then.
 */
export function readRevisions(
  store: Store,
  organisationKeys: readonly string[],
  entityType: EntityType,
): string | Promise<string> {
  const query =
    organisationKeys.length === 1
      ? readOne.compile(store.db, organisationKeys[0] as string, entityType)
      : readMany.compile<RevisionRow>(
          store.db,
          'change_revisions',
          { organisations: organisationKeys, entityType },
          (v) =>
            store.db
              .selectFrom('change_revisions')
              .select(['organisation_key', 'revision'])
              .where('entity_type', '=', v.entityType as string)
              .where('organisation_key', 'in', v.organisations as string[])
              .orderBy('organisation_key'),
        );
  const rows = store.readNow<RevisionRow>(query);
  if (rows !== undefined) return revisionText(rows);
  return store.db.executeQuery<RevisionRow>(query).then((result) => revisionText(result.rows));
}

function revisionText(rows: readonly RevisionRow[]): string {
  let text = '';
  for (const row of rows) text += `${row.organisation_key}=${row.revision};`;
  return text;
}

const ruleRevisions = new RowsStatement(
  ['text'],
  () => `select r.organisation_key, r.entity_type, r.revision from change_revisions r
    join v on r.organisation_key = v.column1
    where r.entity_type in (${RULE_ENTITY_TYPES.map((t) => `'${t}'`).join(', ')})`,
);

/**
 * The revisions of RULE_ENTITY_TYPES in each of the given organisations, one text per organisation
 * (equal texts mean no change in between), in one statement whatever the number of organisations.
 * Read it before reading the entities, in the transaction that uses them.
 */
export async function readRuleRevisions(
  db: Executor,
  organisationKeys: readonly string[],
): Promise<Map<string, string>> {
  const rows = await ruleRevisions.run<{ organisation_key: string; entity_type: string; revision: number | string }>(
    db,
    [organisationKeys],
  );
  const parts = new Map<string, string[]>();
  for (const row of rows) {
    const list = parts.get(row.organisation_key) ?? [];
    list.push(`${row.entity_type}=${row.revision}`);
    parts.set(row.organisation_key, list);
  }
  const texts = new Map<string, string>();
  for (const key of organisationKeys) texts.set(key, (parts.get(key) ?? []).sort().join(';'));
  return texts;
}
