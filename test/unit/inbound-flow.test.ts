import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InboundFlow } from '../../src/mqtt/inbound-flow.ts';

/** Offers messages of a connection; answers how many were handed on. */
function offer(flow: InboundFlow, connection: number, count: number, size = 10): number {
  let handedOn = 0;
  for (let i = 0; i < count; i++) if (flow.handOn(connection, size)) handedOn++;
  return handedOn;
}

describe('inbound flow of device messages', () => {
  it('when a connection has as many messages unanswered as it may then its next is not handed on, until one is answered', () => {
    const flow = new InboundFlow({ perConnection: 4, messages: 100, bytes: 10_000 });
    assert.equal(offer(flow, 1, 10), 4);
    assert.equal(flow.pending(1), 4);
    flow.answered(1);
    assert.equal(offer(flow, 1, 10), 1);
    assert.equal(offer(flow, 2, 3), 3, 'another connection is not held back');
    assert.equal(flow.pending(), 7);
  });

  it('when asked whether a message may be handed on then it is answered as handOn would, and nothing is counted', () => {
    const flow = new InboundFlow({ perConnection: 2, messages: 100, bytes: 1000 });
    assert.equal(flow.mayHandOn(1, 10), true);
    assert.equal(flow.mayHandOn(1, 10), true);
    assert.equal(flow.pending(), 0);
    assert.equal(offer(flow, 1, 2), 2);
    assert.equal(flow.mayHandOn(1, 10), false, 'the connection is at its limit');
    assert.equal(flow.mayHandOn(2, 10), true);
    assert.equal(flow.mayHandOn(2, 990), false, 'the bytes would pass their limit');
    assert.equal(flow.pending(), 2);
  });

  it('when all connections together reach the limit then no message is handed on', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 8, bytes: 10_000 });
    assert.equal(offer(flow, 1, 5), 5);
    assert.equal(offer(flow, 2, 5), 3);
    assert.equal(flow.highWater, 8);
    flow.answered(2);
    assert.equal(offer(flow, 1, 5), 1);
    assert.equal(flow.highWater, 8);
  });

  it('when the bytes would pass their limit then the message is not handed on, unless nothing else waits', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 100, bytes: 1000 });
    assert.equal(offer(flow, 1, 5, 400), 2);
    flow.answered(1);
    flow.answered(1);
    assert.equal(flow.pending(), 0);
    assert.equal(offer(flow, 1, 1, 5000), 1, 'a message larger than the limit still goes alone');
  });

  it('when answers come for a connection with nothing unanswered then nothing changes', () => {
    const flow = new InboundFlow({ perConnection: 2, messages: 100, bytes: 10_000 });
    assert.equal(offer(flow, 1, 5), 2);
    flow.answered(1);
    flow.answered(1);
    flow.answered(1);
    assert.equal(flow.pending(), 0);
    assert.equal(flow.pending(1), 0);
    assert.equal(flow.pending(7), 0, 'a connection never seen');
    assert.equal(offer(flow, 1, 5), 2);
  });
});
