/**
 * Change revisions: a counter per organisation and entity type, raised inside the transaction of each
 * recorded change of that type. Whoever reads the counters before reading the entities knows that
 * what it read is at least as new as the counters say; while they stay the same, nothing of that type
 * changed in those organisations, whichever instance made the change. Kept only for the types listed
 * here: each raise makes concurrent changes of one organisation's entities of that type take turns.
 */
import { sql } from 'kysely';
import { PreparedQuery, QueryCache } from '../store/prepared.ts';
import type { Executor, Store } from '../store/store.ts';
import type { EntityType } from './recorder.ts';

/** Entity types whose every change is recorded (audited) and whose lists are served from memory. */
export const REVISED_ENTITY_TYPES: ReadonlySet<EntityType> = new Set<EntityType>(['Role']);

const raise = new PreparedQuery((db: Executor, organisationKey: string, entityType: string) =>
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
const readOne = new PreparedQuery((db: Executor, organisationKey: string, entityType: string) =>
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
