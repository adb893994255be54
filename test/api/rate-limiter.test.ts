/**
 * The API rate limiter (src/usage/service.ts) against a real store, on each engine, with its clock in
 * the test's hands: windows that end, counts shared by two limiters, batches, pruning and closing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStore, type Store } from '../../src/store/store.ts';
import { ApiRateLimiter, SYNC_MS, WINDOW_MS } from '../../src/usage/service.ts';
import { STORES } from '../support/stores.ts';

const START = Date.UTC(2026, 0, 5, 10, 0);

for (const storeCase of STORES) {
  describe(`API rate limiter [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let store: Store;
    const errors: unknown[] = [];

    before(async () => {
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    });
    after(async () => {
      await store?.close();
      await storeCase.dispose(settings);
    });

    const stored = async (organisationKey: string) =>
      (
        await store.db
          .selectFrom('api_request_windows')
          .select(['window_start', 'requests'])
          .where('organisation_key', '=', organisationKey)
          .orderBy('window_start')
          .execute()
      ).map((r) => [Number(r.window_start), Number(r.requests)]);

    it('when a window fills then requests are refused until the next window, which starts from zero', async () => {
      let now = START + 10_000;
      const limiter = new ApiRateLimiter(
        store.db,
        3,
        (e) => errors.push(e),
        () => now,
      );
      try {
        const answers = [];
        for (let i = 0; i < 4; i++) answers.push(await limiter.take('org-a'));
        assert.deepEqual(
          answers.map((a) => [a.allowed, a.remaining, a.resetSeconds]),
          [
            [true, 2, 50],
            [true, 1, 50],
            [true, 0, 50],
            [false, 0, 50],
          ],
        );
        await limiter.flush('org-a');
        now = START + WINDOW_MS + 1;
        const next = await limiter.take('org-a');
        assert.deepEqual([next.allowed, next.remaining, next.resetSeconds], [true, 2, 60]);
        await limiter.flush('org-a');
        assert.deepEqual(await stored('org-a'), [
          [START, 3],
          [START + WINDOW_MS, 1],
        ]);
      } finally {
        await limiter.close();
      }
      assert.deepEqual(errors, []);
    });

    it('when two limiters share the store then each counts the other once it reads the shared count again', async () => {
      let now = START + 5_000;
      const one = new ApiRateLimiter(
        store.db,
        1000,
        (e) => errors.push(e),
        () => now,
      );
      const two = new ApiRateLimiter(
        store.db,
        1000,
        (e) => errors.push(e),
        () => now,
      );
      try {
        for (let i = 0; i < 25; i++) await one.take('org-b');
        await one.flush('org-b');
        assert.equal((await two.take('org-b')).remaining, 1000 - 26, 'a first request reads the shared count');
        for (let i = 0; i < 5; i++) await one.take('org-b');
        assert.equal((await two.take('org-b')).remaining, 1000 - 27, 'within a second, the count it read');
        await one.flush('org-b');
        now += SYNC_MS;
        assert.equal((await two.take('org-b')).remaining, 1000 - 33, 'a second later, read again');
      } finally {
        await one.close();
        await two.close();
      }
    });

    it('when windows are two days old then the hourly prune forgets them, and past windows leave memory', async () => {
      let now = START + 30_000;
      const limiter = new ApiRateLimiter(
        store.db,
        100,
        (e) => errors.push(e),
        () => now,
      );
      try {
        await limiter.take('org-d');
        await limiter.flush('org-d');
        await limiter.flushAll();
        assert.deepEqual(await stored('org-d'), [[START, 1]]);
        now += 2 * 86_400_000 + WINDOW_MS;
        await limiter.flushAll();
        assert.deepEqual(await stored('org-d'), [], 'pruned');
        await limiter.flushAll();
        const fresh = await limiter.take('org-d');
        assert.equal(fresh.remaining, 99, 'a new window, the old one forgotten');
      } finally {
        await limiter.close();
      }
      assert.deepEqual(errors, []);
    });
  });
}
