/**
 * Background work on a database that hangs (docs/operations.md, "When the database fails"): the
 * retention sweeper, the event compactor, the change feed's catch-up and the flushes of the API rate
 * limit's and refused events' counts each give up within their bound instead of waiting for ever, a
 * request waiting for such a flush is answered within it, and all work again once the database answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/core/config.ts';
import { SecretBox } from '../../src/core/secret-box.ts';
import { Senders } from '../../src/deliveries/senders.ts';
import { DeliveryWorker } from '../../src/deliveries/worker.ts';
import { EventCompactor } from '../../src/events/compactor.ts';
import { RetentionSweeper } from '../../src/events/sweeper.ts';
import { SilenceWatcher } from '../../src/rules/silences.ts';
import { CATCH_UP_MS } from '../../src/store/change-link.ts';
import { storeFaultOf } from '../../src/store/faults.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { ApiRateLimiter, LimitedEventCounter, SYNC_MS } from '../../src/usage/service.ts';
import { within } from '../support/fault-load.ts';
import { type HangingProxy, hangingProxy } from '../support/hanging-proxy.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');
/** The bound the background work is given here (ms). */
const BOUND_MS = 300;

describe('background work when the database hangs [postgres]', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  const settings = postgres?.fresh() ?? { databaseUrl: POSTGRES_URL };
  let proxy: HangingProxy;
  let store: Store;
  before(async () => {
    const target = new URL(POSTGRES_URL);
    proxy = await hangingProxy({ host: target.hostname, port: Number(target.port || 5432) });
    target.host = `127.0.0.1:${proxy.port}`;
    store = await openStore({ databaseUrl: target.toString(), schema: settings.databaseSchema, onFault: () => {} });
  });
  after(async () => {
    proxy.resume();
    await store?.close();
    await proxy?.close();
    await postgres?.dispose?.(settings);
  });

  it('when the database hangs then the delivery worker and the no-data check give up within their bounds, so a stop ends', async () => {
    const config = loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: String(BOUND_MS) });
    const worker = new DeliveryWorker(
      store,
      new SecretBox('bounds'),
      new Senders(store, config),
      config,
      pino({ level: 'silent' }),
    );
    const errors: unknown[] = [];
    const silences = new SilenceWatcher(store, {
      intervalMs: 50,
      statementTimeoutMs: BOUND_MS,
      onError: (error) => errors.push(error),
    });
    await worker.start();
    proxy.pause();
    try {
      // Each looks for due work on a database that does not answer.
      worker.wake();
      silences.start();
      await new Promise((resolve) => setTimeout(resolve, 200));
      await within(10 * BOUND_MS, 'the delivery worker stopping', worker.stop());
      await within(10 * BOUND_MS, 'the no-data watcher stopping', silences.stop());
      assert.ok(
        errors.some((error) => storeFaultOf(error) === 'unavailable'),
        `the no-data check failed as the database not answering: ${errors.join('; ')}`,
      );
    } finally {
      proxy.resume();
    }
  });

  it('when the database hangs then a sweep, a compaction pass and a catch-up end within their bounds, and work once it answers', async () => {
    const sweeper = new RetentionSweeper(store, { statementTimeoutMs: BOUND_MS });
    const compactor = new EventCompactor(store, { ageMs: 0, statementTimeoutMs: BOUND_MS });
    await sweeper.sweep();
    await compactor.compact();

    proxy.pause();
    // Past the bound a statement is abandoned with its connection, and the pass fails as the database
    // not answering; without a bound it would wait until the database answers, here never.
    const unavailable = (error: unknown) => storeFaultOf(error) === 'unavailable';
    await assert.rejects(within(10 * BOUND_MS, 'a sweep', sweeper.sweep()), unavailable);
    await assert.rejects(within(10 * BOUND_MS, 'a compaction pass', compactor.compact()), unavailable);
    // Catching up gives up on the listening connection, and says anything may have changed.
    let toldEverything = false;
    const stopListening = store.changes.follow(['Thing'], (change) => {
      if (change.entityKey === null) toldEverything = true;
    });
    await within(CATCH_UP_MS * 3, 'catching up', Promise.resolve(store.changes.catchUp()));
    stopListening();
    assert.ok(toldEverything, 'the feed was told that anything may have changed');

    proxy.resume();
    assert.deepEqual(await within(10_000, 'a sweep after', sweeper.sweep()), {
      events: 0,
      rollups: 0,
      partitions: 0,
      repaired: 0,
    });
    assert.equal(await within(10_000, 'a compaction pass after', compactor.compact()), 0);
  });

  it('when the database hangs under a background flush of API request counts then a request waiting for the count, and usage, are refused within the bound, and nothing counted is lost', async () => {
    const start = Date.UTC(2026, 0, 5, 10, 0);
    let now = start + 10_000;
    const errors: unknown[] = [];
    const limiter = new ApiRateLimiter(
      store.db,
      1000,
      (e) => errors.push(e),
      () => now,
      BOUND_MS,
    );
    const limited = new LimitedEventCounter(
      store.db,
      (e) => errors.push(e),
      () => now,
      BOUND_MS,
    );
    const unavailable = (error: unknown) => storeFaultOf(error) === 'unavailable';
    // Outside the hang, a statement slower than the bound on a busy machine is tried again.
    const retried = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          return await work();
        } catch (error) {
          if (!unavailable(error) || Date.now() > deadline) throw new Error(`${what}: ${error}`, { cause: error });
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    try {
      assert.equal((await retried('a request before', () => limiter.take('org-hang'))).allowed, true);
      limited.add('org-hang', 5);

      proxy.pause();
      // The flush every second runs outside any request: before, its statement had no bound, and every
      // request of the organisation waited on it for ever once its count was a second old.
      const background = limiter.flushAll();
      const counting = limited.flush();
      now += SYNC_MS;
      await assert.rejects(
        within(10 * BOUND_MS, 'a request waiting for the count', limiter.take('org-hang')),
        unavailable,
      );
      await assert.rejects(within(10 * BOUND_MS, 'a usage flush', limiter.flush('org-hang')), unavailable);
      await within(20 * BOUND_MS, 'the background flush', background);
      await within(20 * BOUND_MS, 'the refused events flush', counting);
      await assert.rejects(
        within(10 * BOUND_MS, 'a usage flush of refused events', limited.flushWithin()),
        unavailable,
      );
      assert.ok(errors.length > 0 && errors.every(unavailable), `failures told: ${errors.map(String).join('; ')}`);

      proxy.resume();
      now += SYNC_MS;
      const afterwards = await retried('a request after', () => limiter.take('org-hang'));
      assert.ok(afterwards.allowed && afterwards.remaining <= 1000 - 2, `remaining ${afterwards.remaining}`);
      await retried('flushing after', () => limiter.flush('org-hang'));
      await retried('flushing refused events after', () => limited.flushWithin());
      // At least: a statement abandoned in the hang may still reach the database once it answers (the
      // proxy forwards what it held), and the count is sent again; counts err on the high side.
      const requests = await store.db
        .selectFrom('api_request_windows')
        .select('requests')
        .where('organisation_key', '=', 'org-hang')
        .executeTakeFirstOrThrow();
      assert.ok(Number(requests.requests) >= 2, `both requests counted: ${requests.requests}`);
      const refused = await store.db
        .selectFrom('event_limit_days')
        .select('events')
        .where('organisation_key', '=', 'org-hang')
        .executeTakeFirstOrThrow();
      assert.ok(Number(refused.events) >= 5, `the refused events counted once it answered: ${refused.events}`);
    } finally {
      proxy.resume();
      await limiter.close();
      await limited.close();
    }
  });
});
