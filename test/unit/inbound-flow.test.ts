import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InboundFlow, LEAST_WAITING_BYTES } from '../../src/mqtt/inbound-flow.ts';

/** Offers messages of a connection; answers how many were handed on. */
function offer(flow: InboundFlow, connection: number, count: number, size = 10): number {
  let handedOn = 0;
  for (let i = 0; i < count; i++) if (flow.handOn(connection, size)) handedOn++;
  return handedOn;
}

describe('inbound flow of device messages', () => {
  it('when a connection has as many messages unanswered as it may then its next is not handed on, until one is answered', () => {
    const flow = new InboundFlow({ perConnection: 4, messages: 100, bytes: 10_000, maxWaitMs: 1000 });
    assert.equal(offer(flow, 1, 10), 4);
    assert.equal(flow.pending(1), 4);
    flow.answered(1);
    assert.equal(offer(flow, 1, 10), 1);
    assert.equal(offer(flow, 2, 3), 3, 'another connection is not held back');
    assert.equal(flow.pending(), 7);
  });

  it('when asked whether a message may be handed on then it is answered as handOn would, and nothing is counted', () => {
    const flow = new InboundFlow({ perConnection: 2, messages: 100, bytes: 1000, maxWaitMs: 1000 });
    assert.equal(flow.mayHandOn(1, 10), true);
    assert.equal(flow.mayHandOn(1, 10), true);
    assert.equal(flow.pending(), 0);
    assert.equal(offer(flow, 1, 2), 2);
    assert.equal(flow.mayHandOn(1, 10), false, 'the connection is at its limit');
    assert.equal(flow.mayHandOn(2, 10), true);
    assert.equal(flow.mayHandOn(2, 990), false, 'the bytes would pass their limit');
    assert.equal(flow.pending(), 2);
  });

  it('when connections holding messages fill seven eighths of the count then only connections holding none are taken', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 80, bytes: 1_000_000, maxWaitMs: 1000 });
    for (let connection = 1; connection <= 70; connection++) assert.equal(offer(flow, connection, 1), 1);
    assert.equal(offer(flow, 1, 1), 0, 'a connection holding a message waits at seven eighths of the count');
    assert.equal(offer(flow, 71, 1), 1, 'one holding none is taken in the room left');
  });

  it('when all connections together reach the limit then no message is handed on', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 8, bytes: 10_000, maxWaitMs: 1000 });
    for (let connection = 1; connection <= 8; connection++) assert.equal(offer(flow, connection, 1), 1);
    assert.equal(offer(flow, 9, 1), 0, 'a connection holding nothing waits too');
    assert.equal(flow.highWater, 8);
    flow.answered(2);
    assert.equal(offer(flow, 9, 5), 1);
    assert.equal(flow.highWater, 8);
  });

  it('when the bytes would pass their limit then the message is not handed on, unless nothing else waits', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 100, bytes: 1000, maxWaitMs: 1000 });
    assert.equal(offer(flow, 1, 1, 400), 1);
    assert.equal(offer(flow, 2, 5, 400), 1);
    flow.answered(1);
    flow.answered(2);
    assert.equal(flow.pending(), 0);
    assert.equal(offer(flow, 1, 1, 5000), 1, 'a message larger than the limit still goes alone');
  });

  it('when past half of the messages that may wait one connection holds its share then it is refused while others are still handed on', () => {
    const flow = new InboundFlow({ perConnection: 1000, messages: 100, bytes: 1_000_000, maxWaitMs: 1000 });
    assert.equal(offer(flow, 1, 100), 50, 'alone, it holds at most half: room is kept for a newcomer');
    for (let connection = 2; connection <= 21; connection++) {
      assert.equal(offer(flow, connection, 1), 1, `modest connection ${connection} is taken`);
    }
    assert.equal(offer(flow, 1, 10), 0, 'the greedy one holds more than its share');
    assert.equal(offer(flow, 2, 1), 1, 'a modest one under its share is taken');
  });

  it('when past half of the bytes that may wait one connection holds its share of them then it is refused while others are still handed on', () => {
    const flow = new InboundFlow({ perConnection: 1000, messages: 1000, bytes: 10_000, maxWaitMs: 1000 });
    assert.equal(offer(flow, 1, 100, 100), 50);
    assert.equal(offer(flow, 2, 1, 100), 1);
    assert.equal(offer(flow, 1, 1, 100), 0);
    assert.equal(offer(flow, 3, 2, 100), 2);
  });

  it('when answers come for a connection with nothing unanswered then nothing changes', () => {
    const flow = new InboundFlow({ perConnection: 2, messages: 100, bytes: 10_000, maxWaitMs: 1000 });
    assert.equal(offer(flow, 1, 5), 2);
    flow.answered(1);
    flow.answered(1);
    flow.answered(1);
    assert.equal(flow.pending(), 0);
    assert.equal(flow.pending(1), 0);
    assert.equal(flow.pending(7), 0, 'a connection never seen');
    assert.equal(offer(flow, 1, 5), 2);
  });

  it('when messages wait and none has been answered for four times maxWaitMs then none is handed on, until one is', () => {
    let now = 0;
    const flow = new InboundFlow({ perConnection: 100, messages: 100, bytes: 10_000, maxWaitMs: 250 }, () => now);
    assert.equal(offer(flow, 1, 2), 2);
    now = 1000;
    assert.equal(offer(flow, 2, 1), 1, 'exactly four times maxWaitMs without an answer');
    now = 1001;
    assert.equal(flow.mayHandOn(3, 10), false);
    assert.equal(offer(flow, 3, 3), 0, 'past it, on any connection');
    flow.answered(1);
    assert.equal(offer(flow, 3, 1), 1, 'an answer is progress');
    now = 2002;
    assert.equal(offer(flow, 3, 1), 0);
    flow.answered(1);
    flow.answered(2);
    flow.answered(3);
    assert.equal(flow.pending(), 0);
    now = 10_000;
    assert.equal(offer(flow, 4, 1), 1, 'nothing waits: the wait starts with the next message');
    now = 10_900;
    assert.equal(offer(flow, 4, 1), 1);
  });

  it('while the server cannot keep up the bytes waiting are at most what it answers in maxWaitMs, at least LEAST_WAITING_BYTES, and once it keeps up the bytes limit alone', () => {
    let now = 0;
    const flow = new InboundFlow(
      { perConnection: 10_000, messages: 10_000, bytes: 64 * 1024 * 1024, maxWaitMs: 1000 },
      () => now,
    );
    const KIB = 1024;
    assert.equal(offer(flow, 1, 100, 100 * KIB), 100, 'no rate known: 10 MB wait, under the limit of 64 MiB');
    now = 1000;
    flow.answered(1);
    // 40 answered over the next second, each after at least half of maxWaitMs: 4,000 KiB a second.
    for (let i = 1; i <= 40; i++) {
      now = 1000 + i * 25;
      flow.answered(1);
    }
    assert.equal(flow.mayHandOn(2, 1), false, '5,900 KiB wait, over the 4,000 answered in a second');
    for (let i = 0; i < 59; i++) flow.answered(1);
    assert.equal(
      offer(flow, 2, 100, 100 * KIB),
      20,
      '4,000 KiB: 40 of 100 KiB, of which one connection alone holds half (room kept for another)',
    );
    // Answered within a tenth of a second: the server keeps up, and the bytes limit alone applies.
    now = 2100;
    for (let i = 0; i < 19; i++) flow.answered(2);
    now = 3000;
    flow.answered(2);
    assert.equal(offer(flow, 3, 100, 100 * KIB), 100);
    // Behind again, at 100 KiB a second: the least bytes still wait.
    now = 4000;
    flow.answered(3);
    assert.equal(flow.mayHandOn(4, 1), false);
    for (let i = 0; i < 99; i++) flow.answered(3);
    assert.equal(
      offer(flow, 4, 100, 100 * KIB),
      5,
      'LEAST_WAITING_BYTES: 1 MiB, 10 of 100 KiB, half for one connection',
    );
    assert.equal(LEAST_WAITING_BYTES, 1024 * KIB);
  });
});
