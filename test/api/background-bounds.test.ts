/**
 * Background work on a database that hangs (docs/operations.md, "When the database fails"): the
 * retention sweeper, the event compactor and the change feed's catch-up each give up within their
 * bound instead of waiting for ever, and work again once the database answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EventCompactor } from '../../src/events/compactor.ts';
import { RetentionSweeper } from '../../src/events/sweeper.ts';
import { CATCH_UP_MS } from '../../src/store/change-link.ts';
import { storeFaultOf } from '../../src/store/faults.ts';
import { openStore, type Store } from '../../src/store/store.ts';
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
});
