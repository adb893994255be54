/**
 * The change feed on real stores (docs/architecture.md, "The change feed"): changes are told once
 * their transaction commits, never when it rolls back, and (PostgreSQL) to the other instances on the
 * same database; `catchUp` tells what others committed before it, on both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ChangeAction, ChangeFeed, type EntityChange, type EntityType } from '../../src/core/change-feed.ts';
import { ChangeGenerations } from '../../src/core/http/answer-cache.ts';
import { noteChange, openStore, type Store } from '../../src/store/store.ts';
import { STORES } from '../support/stores.ts';

const roleChange = (organisationKey: string, entityKey: string) =>
  ({ entityType: 'Role', organisationKey, entityKey, action: 'update' }) as const;

/** A change in the organisation org-w with a detail. */
const detailed = (entityType: EntityType, entityKey: string | null, action: ChangeAction, detail: unknown) => ({
  entityType,
  organisationKey: 'org-w',
  entityKey,
  action,
  detail,
});

/** The changes a feed tells, from now on. */
function heard(store: Store): EntityChange[] {
  const changes: EntityChange[] = [];
  store.changes.follow(['Role', 'Thing'], (change) => changes.push(change));
  return changes;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`waited 5 s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

for (const storeCase of STORES) {
  describe(`change feed [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let one: Store;
    let two: Store;

    before(async () => {
      one = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
      two = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    });
    after(async () => {
      await one?.close();
      await two?.close();
      await storeCase.dispose(settings);
    });

    it('when a transaction notes changes then they are told after it commits, in order, and only then', async () => {
      const changes = heard(one);
      let toldInside = -1;
      await one.transaction(async (tx) => {
        await noteChange(tx, roleChange('org-a', 'r1'));
        await noteChange(tx, { entityType: 'Thing', organisationKey: 'org-a', entityKey: 't1', action: 'create' });
        toldInside = changes.length;
      });
      assert.equal(toldInside, 0, 'nothing is told before the commit');
      assert.deepEqual(
        changes.map((c) => [c.entityType, c.organisationKey, c.entityKey, c.action, c.remote]),
        [
          ['Role', 'org-a', 'r1', 'update', false],
          ['Thing', 'org-a', 't1', 'create', false],
        ],
      );
    });

    it('when a transaction that noted changes rolls back then nothing is told', async () => {
      const changes = heard(one);
      await assert.rejects(
        one.transaction(async (tx) => {
          await noteChange(tx, roleChange('org-a', 'r2'));
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      await one.changes.catchUp();
      assert.deepEqual(changes, []);
    });

    it('when a change is noted outside a transaction then it is told at once', async () => {
      const changes = heard(one);
      await noteChange(one.db, roleChange('org-b', 'r3'));
      assert.equal(changes.length, 1);
      assert.equal(changes[0]?.organisationKey, 'org-b');
    });

    it('when noteChange gets something that is not a store handle then it throws', async () => {
      await assert.rejects(noteChange({} as Store['db'], roleChange('org-a', 'r4')), /not a database handle/);
    });

    it('when another instance commits a change then catching up tells it here before it returns', async () => {
      const generations = new ChangeGenerations(one.changes, 'Role');
      const before = await generations.of(['org-c']);
      // A write of the other instance, committed: the table holds something new.
      await two.transaction(async (tx) => {
        await tx
          .insertInto('change_revisions')
          .values({ organisation_key: 'org-c', entity_type: 'Elsewhere', revision: 1 })
          .execute();
        await noteChange(tx, roleChange('org-c', 'r5'));
      });
      const afterwards = await generations.of(['org-c']);
      assert.notEqual(afterwards, before, 'the generation changed before the read that follows the commit');
    });

    if (storeCase.name === 'postgres') {
      it('when another instance commits changes then they are told here, as remote, with their keys', async () => {
        const changes = heard(one);
        const mine = heard(two);
        await two.transaction(async (tx) => {
          for (let i = 0; i < 400; i++) await noteChange(tx, roleChange('org-d', `role-${i}`));
        });
        await until(() => changes.length >= 400, 'the other instance to hear the changes');
        assert.deepEqual(
          changes.map((c) => c.entityKey),
          Array.from({ length: 400 }, (_, i) => `role-${i}`),
          'every change, in order, across several notices',
        );
        assert.ok(changes.every((c) => c.remote && c.organisationKey === 'org-d'));
        // Its own instance heard them once, as its own, not again from the database.
        await two.changes.catchUp();
        assert.equal(mine.length, 400);
        assert.ok(mine.every((c) => !c.remote));
      });

      it('when this instance wants a type then the others send its details, split under the notice limit, and stop when it no longer does', async () => {
        const changes: EntityChange[] = [];
        one.changes.follow(['Alert', 'Event', 'Group'], (change) => changes.push(change));
        const stop = one.changes.want(['Alert', 'Event']);
        await until(() => two.changes.wantedByOthers('Alert'), 'the other instance to hear what this one wants');
        assert.equal(two.changes.wanted('Event'), true);
        assert.equal(two.changes.wantedByOthers('Group'), false);
        const events = Array.from({ length: 200 }, (_, i) => ({
          thing_key: 't',
          timestamp: i,
          data: { pad: 'p'.repeat(100) },
        }));
        await two.transaction(async (tx) => {
          await noteChange(tx, detailed('Alert', 'a1', 'create', { n: 1 }));
          await noteChange(tx, detailed('Event', null, 'create', events));
          await noteChange(
            tx,
            detailed('Event', null, 'create', [{ thing_key: 'big', timestamp: 1, data: { blob: 'b'.repeat(9000) } }]),
          );
          await noteChange(tx, detailed('Alert', 'a2', 'update', { blob: 'b'.repeat(9000) }));
          await noteChange(tx, detailed('Group', 'g1', 'update', { n: 2 }));
        });
        await until(() => changes.some((c) => c.entityKey === 'g1'), 'the changes');
        assert.deepEqual(changes.find((c) => c.entityKey === 'a1')?.detail, { n: 1 });
        const told = changes
          .filter((c) => c.entityType === 'Event')
          .flatMap((c) => c.detail as { thing_key: string }[]);
        assert.equal(told.length, 201, 'every event, over several notices');
        assert.deepEqual(
          told.at(-1),
          { thing_key: 'big', timestamp: 1, data: null, partial: true },
          'too large: without its data',
        );
        assert.equal(changes.find((c) => c.entityKey === 'a2')?.detail, undefined, 'too large: without its detail');
        assert.equal(changes.find((c) => c.entityKey === 'g1')?.detail, undefined, 'not wanted: without its detail');
        stop();
        await until(() => !two.changes.wantedByOthers('Alert'), 'the other instance to hear it is no longer wanted');
        changes.length = 0;
        await two.transaction(async (tx) => {
          await noteChange(tx, detailed('Event', null, 'create', events));
          await noteChange(tx, detailed('Alert', 'a3', 'create', { n: 3 }));
        });
        await until(() => changes.length > 0, 'the alert');
        assert.deepEqual(
          changes.map((c) => [c.entityType, c.detail]),
          [['Alert', undefined]],
          'events are not sent at all, nor details, when nobody wants them',
        );
      });

      it('when a transaction of another instance rolls back then nothing is told here', async () => {
        const changes = heard(one);
        await assert.rejects(
          two.transaction(async (tx) => {
            await noteChange(tx, roleChange('org-e', 'r6'));
            throw new Error('rolled back');
          }),
        );
        await noteChange(two.db, roleChange('org-e', 'r7'));
        await one.changes.catchUp();
        assert.deepEqual(
          changes.map((c) => c.entityKey),
          ['r7'],
        );
      });
    }
  });
}

describe('change feed', () => {
  it('when a follower fails then the others are still told and the failure is reported', () => {
    const feed = new ChangeFeed();
    const told: string[] = [];
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    feed.follow(['Thing'], () => {
      throw new Error('broken follower');
    });
    const stop = feed.follow(['Thing', 'Role'], (c) => told.push(`${c.entityType}:${c.entityKey}`));
    feed.tell([{ entityType: 'Thing', organisationKey: 'o', entityKey: 't', action: 'create', remote: false }]);
    feed.tell([{ entityType: 'User', organisationKey: 'o', entityKey: 'u', action: 'create', remote: false }]);
    stop();
    feed.tell([{ entityType: 'Role', organisationKey: 'o', entityKey: 'r', action: 'create', remote: false }]);
    assert.deepEqual(told, ['Thing:t']);
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        process.off('warning', onWarning);
        assert.ok(
          warnings.some((w) => w.includes('broken follower')),
          warnings.join('\n'),
        );
        resolve();
      }),
    );
  });

  it('when types are wanted then the feed says so until every want is taken back, and tells watchers of the set', () => {
    const feed = new ChangeFeed();
    let told = 0;
    feed.onWantsChange(() => told++);
    assert.equal(feed.wanted('Event'), false);
    const one = feed.want(['Event']);
    const two = feed.want(['Event', 'Alert']);
    assert.deepEqual(feed.wantedHere().sort(), ['Alert', 'Event']);
    assert.equal(told, 2, 'Event, then Alert, joined the set');
    one();
    one();
    assert.equal(feed.wanted('Event'), true, 'still wanted by the other');
    assert.equal(told, 2);
    two();
    assert.equal(feed.wanted('Event'), false);
    assert.deepEqual(feed.wantedHere(), []);
    assert.equal(told, 3);
    feed.setWantedElsewhere((type) => type === 'Alert');
    assert.equal(feed.wanted('Alert'), true);
    assert.equal(feed.wantedByOthers('Event'), false);
  });

  it('when anything may have changed then every follower hears of it for no organisation', () => {
    const feed = new ChangeFeed();
    const generations = new ChangeGenerations(feed, 'Role');
    const before = generations.of(['a', 'b']);
    feed.tell([{ entityType: 'Role', organisationKey: 'a', entityKey: 'r', action: 'update', remote: false }]);
    const afterA = generations.of(['a', 'b']);
    assert.notEqual(afterA, before);
    assert.equal(generations.of(['b']), '0;0', 'another organisation keeps its generation');
    feed.tellEverything();
    assert.notEqual(generations.of(['b']), '0;0');
    assert.notEqual(generations.of(['a', 'b']), afterA);
  });
});
