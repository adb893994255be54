import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { applyStoreBounds, statementWaitMs, withStoreDeadline } from '../../src/store/faults.ts';

describe('statement bounds', () => {
  applyStoreBounds();

  it('when bounded work is running then its statements wait at most until its deadline', async () => {
    const inside = await withStoreDeadline(1000, async () => statementWaitMs());
    assert.ok(inside !== undefined && inside > 900 && inside <= 1000, String(inside));
    assert.equal(statementWaitMs(), undefined, 'nothing bounds work outside');
  });

  it('when bounded work wakes a worker by a timer then the worker runs unbounded once the work is over', async () => {
    let seen: number | undefined | 'not run' = 'not run';
    // A delivery worker woken from a device request's transaction: its later statements must not
    // inherit that request's deadline, long past by then (every statement would be abandoned at once).
    await withStoreDeadline(20, async () => {
      setTimeout(() => {
        seen = statementWaitMs();
      }, 60);
    });
    await sleep(120);
    assert.equal(seen, undefined);
  });

  it('when bounded work nests another then the sooner deadline holds', async () => {
    const nested = await withStoreDeadline(100, () => withStoreDeadline(5000, async () => statementWaitMs()));
    assert.ok(nested !== undefined && nested <= 100, String(nested));
  });
});
