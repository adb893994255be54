import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InboundFlow } from '../../src/mqtt/inbound-flow.ts';

/** Offers messages of a connection, in order; answers which went on. */
function offer(flow: InboundFlow, connection: number, count: number, size = 10): number[] {
  const went: number[] = [];
  for (let i = 0; i < count; i++) {
    flow.admit(connection, () => {
      went.push(i);
      flow.handedOn(connection, size);
    });
  }
  return went;
}

describe('inbound flow of device messages', () => {
  it('when a connection reaches its own limit then its further messages wait, in order, until half of its are answered', () => {
    const flow = new InboundFlow({ perConnection: 4, messages: 100, bytes: 10_000 });
    const went = offer(flow, 1, 10);
    assert.deepEqual(went, [0, 1, 2, 3]);
    assert.equal(flow.pending(1), 4);
    flow.answered(1);
    assert.deepEqual(went, [0, 1, 2, 3], 'still held at 3 of 4');
    flow.answered(1);
    assert.deepEqual(went, [0, 1, 2, 3, 4, 5], 'admitted at 2, until held again at 4');
    assert.equal(flow.pending(), 4);
    assert.deepEqual(offer(flow, 2, 3), [0, 1, 2], 'another connection goes on');
  });

  it('when the whole reaches its limit then every sending connection is held until the whole is below three quarters', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 8, bytes: 10_000 });
    const first = offer(flow, 1, 5);
    const second = offer(flow, 2, 5);
    assert.deepEqual(first, [0, 1, 2, 3, 4]);
    assert.deepEqual(second, [0, 1, 2], 'held once the whole reached 8');
    assert.equal(flow.highWater, 8);
    flow.answered(1);
    flow.answered(1);
    assert.deepEqual(second, [0, 1, 2], 'at 6 of 8 the whole is still busy');
    flow.answered(1);
    assert.deepEqual(second, [0, 1, 2, 3, 4], 'below 6 the held connection goes on');
  });

  it('when the bytes reach their limit then the sender is held', () => {
    const flow = new InboundFlow({ perConnection: 100, messages: 100, bytes: 1000 });
    assert.deepEqual(offer(flow, 1, 5, 400), [0, 1, 2]);
    flow.answered(1);
    flow.answered(1);
    assert.equal(flow.pending(1), 3, 'the two held went on at 400 bytes');
  });

  it('when a held connection closes then its waiting messages are dropped and its answered ones still counted down', () => {
    const flow = new InboundFlow({ perConnection: 2, messages: 100, bytes: 10_000 });
    const went = offer(flow, 1, 5);
    flow.closed(1);
    assert.equal(flow.pending(), 2);
    flow.answered(1);
    flow.answered(1);
    assert.equal(flow.pending(), 0);
    assert.deepEqual(went, [0, 1]);
    flow.answered(1);
    assert.equal(flow.pending(), 0, 'an answer for a forgotten connection changes nothing');
  });
});
