import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { ExternalIntake } from '../../src/mqtt/external-intake.ts';

/** A message's handling that ends when the test says. */
function handling() {
  let end = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  let started = false;
  return {
    handOn: () => {
      started = true;
      return ended;
    },
    started: () => started,
    end: async () => {
      end();
      // The intake hears of the end a few microtasks later.
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('intake of messages from the external broker', () => {
  it('when as many messages are handled as may be then the next is held, and handed on once one ends', async () => {
    const intake = new ExternalIntake({ messages: 2, bytes: 1000 });
    const [first, second, third] = [handling(), handling(), handling()];
    intake.offer(10, first.handOn);
    intake.offer(10, second.handOn);
    intake.offer(10, third.handOn);
    assert.deepEqual(intake.figures(), { pending: 2, held: true, highWater: 2 });
    assert.equal(third.started(), false);
    await first.end();
    assert.equal(third.started(), true);
    assert.deepEqual(intake.figures(), { pending: 2, held: false, highWater: 2 });
  });

  it('when messages are handled or held then idle settles once the last, held one included, has ended', async () => {
    const intake = new ExternalIntake({ messages: 1, bytes: 1000 });
    let idle = false;
    await intake.idle();
    const [first, second] = [handling(), handling()];
    intake.offer(10, first.handOn);
    intake.offer(10, second.handOn);
    void intake.idle().then(() => {
      idle = true;
    });
    await first.end();
    assert.equal(idle, false, 'the held one is being handled now');
    await second.end();
    assert.equal(idle, true);
  });

  it('when the bytes handled would pass their bound then the next is held, unless none is handled', async () => {
    const intake = new ExternalIntake({ messages: 10, bytes: 100 });
    const [small, large] = [handling(), handling()];
    intake.offer(60, small.handOn);
    intake.offer(60, large.handOn);
    assert.equal(large.started(), false);
    await small.end();
    assert.equal(large.started(), true, 'alone, a message of any size is handled');
    const huge = handling();
    await large.end();
    intake.offer(1000, huge.handOn);
    assert.equal(huge.started(), true);
  });

  it('when the connection is lost with a message held then it is dropped, and the next connection is not held back by it', async () => {
    const intake = new ExternalIntake({ messages: 1, bytes: 1000 });
    const [first, lost, next] = [handling(), handling(), handling()];
    intake.offer(10, first.handOn);
    intake.offer(10, lost.handOn);
    intake.dropHeld();
    assert.equal(intake.figures().held, false);
    await first.end();
    assert.equal(lost.started(), false);
    intake.offer(10, next.handOn);
    assert.equal(next.started(), true);
  });

  it('when a message is offered while one of a lost connection is still held then the lost one is dropped', async () => {
    const intake = new ExternalIntake({ messages: 1, bytes: 1000 });
    const [first, lost, next] = [handling(), handling(), handling()];
    intake.offer(10, first.handOn);
    intake.offer(10, lost.handOn);
    intake.offer(10, next.handOn);
    await first.end();
    assert.equal(lost.started(), false);
    assert.equal(next.started(), true);
    assert.equal(intake.figures().highWater, 1);
  });

  it('when the intake is closed then the message held and those offered later are not handed on', async () => {
    const intake = new ExternalIntake({ messages: 1, bytes: 1000 });
    const [first, held, later] = [handling(), handling(), handling()];
    intake.offer(10, first.handOn);
    intake.offer(10, held.handOn);
    intake.close();
    intake.offer(10, later.handOn);
    await first.end();
    assert.equal(held.started(), false);
    assert.equal(later.started(), false);
    assert.deepEqual(intake.figures(), { pending: 0, held: false, highWater: 1 });
  });

  it('when a message was held within the time asked about then heldWithin says so, and not once the connection is lost', async () => {
    mock.timers.enable({ apis: ['Date'] });
    try {
      const intake = new ExternalIntake({ messages: 1, bytes: 1000 });
      const [first, held] = [handling(), handling()];
      assert.equal(intake.heldWithin(3000), false, 'nothing held yet');
      intake.offer(10, first.handOn);
      intake.offer(10, held.handOn);
      mock.timers.tick(10_000);
      assert.equal(intake.heldWithin(3000), true, 'held now, however long');
      await first.end();
      assert.equal(held.started(), true);
      mock.timers.tick(3000);
      assert.equal(intake.heldWithin(3000), true, 'let through 3 s ago');
      mock.timers.tick(1);
      assert.equal(intake.heldWithin(3000), false, 'let through longer ago');
      intake.offer(10, handling().handOn);
      intake.dropHeld();
      assert.equal(intake.heldWithin(3000), false, 'what a lost connection held does not count');
    } finally {
      mock.timers.reset();
    }
  });

  it('when a handling fails then its room is given back', async () => {
    const intake = new ExternalIntake({ messages: 1, bytes: 1000 });
    const next = handling();
    intake.offer(10, () => Promise.reject(new Error('failed')));
    await new Promise((resolve) => setImmediate(resolve));
    intake.offer(10, next.handOn);
    assert.equal(next.started(), true);
  });
});
