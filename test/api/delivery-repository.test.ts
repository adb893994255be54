/**
 * The delivery queue's repository (src/deliveries/repository.ts) against a real store, on each engine:
 * queuing, claiming under a lease, finishing with an attempt, and listing attempts.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { ListQuery } from '../../src/core/list-query.ts';
import {
  claimDueDeliveries,
  enqueueDeliveries,
  finishDelivery,
  listDeliveryAttempts,
  releaseClaims,
} from '../../src/deliveries/repository.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { STORES } from '../support/stores.ts';

const NOW = Date.UTC(2025, 5, 1, 12);
const LIST: ListQuery = { page: 1, per: 20, orderBy: 'at', order: 'desc', keywords: [], matchAll: true };

for (const storeCase of STORES) {
  describe(`delivery repository [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let store: Store;

    before(async () => {
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    });
    after(async () => {
      await store?.close();
      await storeCase.dispose(settings);
    });
    beforeEach(async () => {
      await store.db.deleteFrom('delivery_attempts').execute();
      await store.db.deleteFrom('deliveries').execute();
    });

    const queue = (actionKeys: string[], now = NOW, payload = '{"message":"hot"}') =>
      enqueueDeliveries(store.db, { organisationKey: 'org', ruleKey: 'rule', actionKeys, payload, now });
    const claim = (instance: string, now = NOW, limit = 20) =>
      store.transaction((tx) => claimDueDeliveries(tx, { instance, now, claimedUntil: now + 1000, limit }));
    const stored = () => store.db.selectFrom('deliveries').selectAll().orderBy('notification_action_key').execute();

    it('when deliveries are queued then there is one pending, due, unclaimed delivery per action', async () => {
      await queue(['a1', 'a2']);
      await queue([]);
      const rows = await stored();
      assert.deepEqual(
        rows.map((r) => [r.notification_action_key, r.rule_key, r.organisation_key, r.status, r.attempts]),
        [
          ['a1', 'rule', 'org', 'pending', 0],
          ['a2', 'rule', 'org', 'pending', 0],
        ],
      );
      for (const row of rows) {
        assert.equal(row.payload, '{"message":"hot"}');
        assert.equal(Number(row.next_attempt_at), NOW);
        assert.equal(row.claimed_by, null);
        assert.equal(row.claimed_until, null);
      }
      assert.notEqual(rows[0]?.delivery_key, rows[1]?.delivery_key);
    });

    it('when due deliveries are claimed then the soonest due come first, up to the limit, and are not claimed again while the claim holds', async () => {
      await queue(['late'], NOW - 1000);
      await queue(['early'], NOW - 5000);
      await queue(['future'], NOW + 60_000);
      const first = await claim('one', NOW, 1);
      assert.deepEqual(
        first.map((r) => r.notification_action_key),
        ['early'],
      );
      assert.equal(first[0]?.claimed_by, null, 'answered as they were before the claim');
      const second = await claim('two', NOW);
      assert.deepEqual(
        second.map((r) => r.notification_action_key),
        ['late'],
      );
      assert.deepEqual(await claim('three', NOW), []);
      const rows = await stored();
      assert.deepEqual(
        rows.map((r) => [
          r.notification_action_key,
          r.claimed_by,
          r.claimed_until === null ? null : Number(r.claimed_until),
        ]),
        [
          ['early', 'one', NOW + 1000],
          ['future', null, null],
          ['late', 'two', NOW + 1000],
        ],
      );
      // Once the claim lapses, another instance may claim it.
      const lapsed = await claim('four', NOW + 2000);
      assert.deepEqual(
        lapsed.map((r) => r.notification_action_key),
        ['early', 'late'],
      );
    });

    it('when a claimed delivery is finished then its state and attempt are recorded and the claim is released', async () => {
      await queue(['a1']);
      const [row] = await claim('one');
      assert.ok(row);
      const done = await store.transaction((tx) =>
        finishDelivery(tx, row, 'one', {
          status: 'pending',
          attempts: 1,
          nextAttemptAt: NOW + 500,
          now: NOW + 10,
          attempt: { number: 1, status: 'failed', error: 'the peer answered 500', durationMs: 7 },
        }),
      );
      assert.equal(done, true);
      const [after] = await stored();
      assert.equal(after?.status, 'pending');
      assert.equal(after?.attempts, 1);
      assert.equal(Number(after?.next_attempt_at), NOW + 500);
      assert.equal(Number(after?.updated_at), NOW + 10);
      assert.equal(after?.claimed_by, null);
      assert.equal(after?.claimed_until, null);
      const attempts = await store.db.selectFrom('delivery_attempts').selectAll().execute();
      assert.deepEqual(
        attempts.map((a) => [
          a.delivery_key,
          a.notification_action_key,
          a.organisation_key,
          a.attempt,
          a.status,
          a.error,
          Number(a.at),
          a.duration_ms,
        ]),
        [[row.delivery_key, 'a1', 'org', 1, 'failed', 'the peer answered 500', NOW + 10, 7]],
      );
      assert.deepEqual(await claim('one', NOW + 100), [], 'not due before its next attempt');
      assert.equal((await claim('one', NOW + 500)).length, 1);
    });

    it('when an instance finishes a delivery it no longer holds then nothing is recorded', async () => {
      await queue(['a1']);
      const [row] = await claim('one');
      assert.ok(row);
      await claim('two', NOW + 2000);
      const done = await store.transaction((tx) =>
        finishDelivery(tx, row, 'one', {
          status: 'delivered',
          attempts: 1,
          nextAttemptAt: NOW,
          now: NOW,
          attempt: { number: 1, status: 'delivered', error: null, durationMs: 3 },
        }),
      );
      assert.equal(done, false);
      const [after] = await stored();
      assert.equal(after?.status, 'pending');
      assert.equal(after?.claimed_by, 'two');
      assert.equal((await store.db.selectFrom('delivery_attempts').selectAll().execute()).length, 0);
    });

    it('when a delivery is cancelled without an attempt then no attempt is recorded', async () => {
      await queue(['a1']);
      const [row] = await claim('one');
      assert.ok(row);
      const done = await store.transaction((tx) =>
        finishDelivery(tx, row, 'one', { status: 'cancelled', attempts: 0, nextAttemptAt: NOW, now: NOW }),
      );
      assert.equal(done, true);
      assert.equal((await stored())[0]?.status, 'cancelled');
      assert.equal((await store.db.selectFrom('delivery_attempts').selectAll().execute()).length, 0);
      assert.deepEqual(await claim('one', NOW + 5000), [], 'a finished delivery is not claimed');
    });

    it('when claims are released then pending deliveries return to the queue and finished ones stay as they are', async () => {
      await queue(['a1', 'a2']);
      const claimed = await claim('gone');
      const finished = claimed.find((r) => r.notification_action_key === 'a2');
      assert.ok(finished);
      await store.transaction((tx) =>
        finishDelivery(tx, finished, 'gone', { status: 'cancelled', attempts: 0, nextAttemptAt: NOW, now: NOW }),
      );
      await releaseClaims(store.db);
      const again = await claim('next');
      assert.deepEqual(
        again.map((r) => r.notification_action_key),
        ['a1'],
      );
    });

    it("when an action's attempts are listed then they come newest first, paged, with the total", async () => {
      await queue(['a1', 'other']);
      for (let attempt = 1; attempt <= 3; attempt++) {
        for (const row of await claim('one', NOW + attempt * 10_000)) {
          await store.transaction((tx) =>
            finishDelivery(tx, row, 'one', {
              status: 'pending',
              attempts: attempt,
              nextAttemptAt: NOW + attempt * 10_000,
              now: NOW + attempt * 10_000 + (row.notification_action_key === 'a1' ? 0 : 1),
              attempt: { number: attempt, status: 'failed', error: `try ${attempt}`, durationMs: attempt },
            }),
          );
        }
      }
      const page = await listDeliveryAttempts(store.db, 'a1', { ...LIST, per: 2 });
      assert.equal(page.total, 3);
      assert.deepEqual(
        page.rows.map((r) => [r.attempt, r.error]),
        [
          [3, 'try 3'],
          [2, 'try 2'],
        ],
      );
      const searched = await listDeliveryAttempts(store.db, 'a1', { ...LIST, keywords: ['try', '1'] });
      assert.deepEqual(
        searched.rows.map((r) => r.attempt),
        [1],
      );
      assert.equal((await listDeliveryAttempts(store.db, 'none', LIST)).total, 0);
    });

    if (storeCase.name === 'postgres') {
      it('when two instances claim at the same time then neither claims a delivery the other is claiming', async () => {
        await queue(['a1', 'a2', 'a3', 'a4']);
        let inner: string[] = [];
        const outer = await store.transaction(async (tx) => {
          const mine = await claimDueDeliveries(tx, { instance: 'one', now: NOW, claimedUntil: NOW + 1000, limit: 2 });
          // The other instance's transaction runs while this one holds its rows.
          inner = (await claim('two', NOW, 10)).map((r) => r.notification_action_key);
          return mine.map((r) => r.notification_action_key);
        });
        assert.deepEqual(outer.length, 2);
        assert.deepEqual(inner.length, 2);
        assert.deepEqual([...outer, ...inner].sort(), ['a1', 'a2', 'a3', 'a4']);
      });
    }
  });
}
