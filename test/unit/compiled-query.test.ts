/**
 * compiledQuery (src/store/prepared.ts): a fixed-shape query declared once, compiled once per SQL
 * dialect, run with new arguments in the parameter slots its placeholders landed in.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { compiledQuery } from '../../src/store/prepared.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import type { Database } from '../../src/store/tables.ts';

/** Compiles PostgreSQL's SQL without a server (running a query answers no rows). */
const postgres = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

describe('compiledQuery', () => {
  let store: Store;
  before(async () => {
    store = await openStore({ databaseUrl: 'sqlite:' });
  });
  after(async () => {
    await store?.close();
  });

  it('when it runs again with other arguments then it is built once and each run reads its own arguments', async () => {
    let builds = 0;
    const upsert = compiledQuery((db, organisationKey: string, entityType: string, revision: number) => {
      builds++;
      return db
        .insertInto('change_revisions')
        .values({ organisation_key: organisationKey, entity_type: entityType, revision })
        .onConflict((oc) => oc.columns(['organisation_key', 'entity_type']).doUpdateSet({ revision }));
    });
    const revisionOf = compiledQuery((db, organisationKey: string, entityType: string) => {
      builds++;
      return db
        .selectFrom('change_revisions')
        .select(['revision'])
        .where('organisation_key', '=', organisationKey)
        .where('entity_type', '=', entityType);
    });
    await upsert.execute(store.db, 'org-a', 'Rule', 3);
    await upsert.execute(store.db, 'org-b', 'Rule', 5);
    await upsert.execute(store.db, 'org-a', 'Group', 7);
    await upsert.execute(store.db, 'org-a', 'Rule', 4);
    // Typed by its query: { revision: number } | undefined.
    const row: { revision: number } | undefined = await revisionOf.executeTakeFirst(store.db, 'org-a', 'Rule');
    assert.equal(row?.revision, 4);
    assert.equal((await revisionOf.executeTakeFirst(store.db, 'org-b', 'Rule'))?.revision, 5);
    assert.equal((await revisionOf.executeTakeFirst(store.db, 'org-a', 'Group'))?.revision, 7);
    assert.equal(await revisionOf.executeTakeFirst(store.db, 'org-c', 'Rule'), undefined);
    assert.deepEqual(await revisionOf.execute(store.db, 'org-c', 'Rule'), []);
    assert.equal(builds, 2, 'each declaration is built once');
  });

  it('when an argument is used twice among constants then every slot it landed in takes it, and constants stay', () => {
    const query = compiledQuery((db, organisationKey: string, revision: number) =>
      db
        .selectFrom('change_revisions')
        .select('entity_type')
        .where('organisation_key', '=', organisationKey)
        .where('entity_type', '=', 'Rule')
        .where('revision', '>', revision)
        .where('organisation_key', '<>', sqlConstant)
        .where('revision', '<', revision),
    );
    const compiled = query.compile(postgres, 'org-a', 12);
    assert.equal(
      compiled.sql,
      'select "entity_type" from "change_revisions" where "organisation_key" = $1 and "entity_type" = $2 and "revision" > $3 and "organisation_key" <> $4 and "revision" < $5',
    );
    assert.deepEqual(compiled.parameters, ['org-a', 'Rule', 12, sqlConstant, 12]);
    assert.deepEqual(query.compile(postgres, 'org-b', 13).parameters, ['org-b', 'Rule', 13, sqlConstant, 13]);
  });

  it('when one declaration runs on two dialects then each compiles its own statement, once', async () => {
    let builds = 0;
    const query = compiledQuery((db, organisationKey: string) => {
      builds++;
      return db.selectFrom('change_revisions').select('revision').where('organisation_key', '=', organisationKey);
    });
    for (const key of ['a', 'b']) {
      assert.equal(
        query.compile(postgres, key).sql,
        'select "revision" from "change_revisions" where "organisation_key" = $1',
      );
      assert.equal(
        query.compile(store.db, key).sql,
        'select "revision" from "change_revisions" where "organisation_key" = ?',
      );
      assert.deepEqual(query.compile(store.db, key).parameters, [key]);
      await query.execute(store.db, key);
      await store.transaction((tx) => query.execute(tx, key));
    }
    assert.equal(builds, 2);
  });

  it('when two declarations build the same query then each keeps its own statement', () => {
    const byKey = compiledQuery((db, organisationKey: string) =>
      db.selectFrom('change_revisions').select('revision').where('organisation_key', '=', organisationKey),
    );
    const byType = compiledQuery((db, entityType: string) =>
      db.selectFrom('change_revisions').select('revision').where('entity_type', '=', entityType),
    );
    assert.match(byKey.compile(postgres, 'x').sql, /"organisation_key" = \$1$/);
    assert.match(byType.compile(postgres, 'x').sql, /"entity_type" = \$1$/);
  });

  it('when an argument looks like a placeholder or is null then it is passed as it is', () => {
    const query = compiledQuery((db, organisationKey: string | null, entityType: string) =>
      db
        .selectFrom('change_revisions')
        .select('revision')
        .where('organisation_key', '=', organisationKey as string)
        .where('entity_type', '=', entityType),
    );
    assert.deepEqual(query.compile(postgres, '\u0000v1\u0000', '\u0000v0\u0000').parameters, [
      '\u0000v1\u0000',
      '\u0000v0\u0000',
    ]);
    assert.deepEqual(query.compile(postgres, null, 'Rule').parameters, [null, 'Rule']);
  });
});

const sqlConstant = 'constant';
