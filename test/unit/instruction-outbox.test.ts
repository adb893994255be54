/**
 * Instructions on their way to an external broker (src/mqtt/instruction-outbox.ts): published while
 * connected, held within bounds while the broker is away, published once it is back; a sender never
 * waits longer than its bound.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InstructionOutbox, type OutboxClient } from '../../src/mqtt/instruction-outbox.ts';

/** A client whose broker takes each message when the test says so. */
class FakeClient implements OutboxClient {
  connected = true;
  readonly published: { topic: string; payload: string; take: () => void }[] = [];

  publishAsync(topic: string, payload: string): Promise<unknown> {
    return new Promise((resolve) => this.published.push({ topic, payload, take: () => resolve(undefined) }));
  }
}

function outboxOf(client: FakeClient, limits: Partial<ConstructorParameters<typeof InstructionOutbox>[2]> = {}) {
  const delivered: string[] = [];
  let dropped = 0;
  const outbox = new InstructionOutbox(
    client,
    {
      delivered: (alertKey) => delivered.push(alertKey),
      dropped: (count) => {
        dropped += count;
      },
      failed: (error) => assert.fail(error),
    },
    { maxHeld: 3, maxHeldBytes: 1000, maxInFlight: 2, waitMs: 50, ...limits },
  );
  return { outbox, delivered, dropped: () => dropped };
}

describe('instruction outbox', () => {
  it('when the broker takes a message then the sender is answered and the instruction is delivered', async () => {
    const client = new FakeClient();
    const { outbox, delivered } = outboxOf(client);
    const sent = outbox.send('t/1', 'one', 'a1');
    client.published[0]?.take();
    await sent;
    assert.deepEqual(delivered, ['a1']);
  });

  it('when the broker does not answer then the sender waits only its bound, and delivered follows once it does', async () => {
    const client = new FakeClient();
    const { outbox, delivered } = outboxOf(client);
    const started = Date.now();
    await outbox.send('t/1', 'one', 'a1');
    assert.ok(Date.now() - started < 1000, 'answered within the bound');
    assert.deepEqual(delivered, []);
    client.published[0]?.take();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(delivered, ['a1']);
  });

  it('when the broker is away then messages are held at once, the oldest dropped past the bound, and the rest published in order once connected', async () => {
    const client = new FakeClient();
    client.connected = false;
    const { outbox, delivered, dropped } = outboxOf(client);
    for (let i = 1; i <= 5; i++) await outbox.send(`t/${i}`, `m${i}`, `a${i}`);
    assert.equal(client.published.length, 0, 'nothing handed to the client while it is away');
    assert.equal(outbox.heldCount, 3);
    assert.equal(dropped(), 2);

    client.connected = true;
    outbox.flush();
    // Two in flight at most; the third follows once one is taken.
    assert.deepEqual(
      client.published.map((p) => p.topic),
      ['t/3', 't/4'],
    );
    client.published[0]?.take();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      client.published.map((p) => p.topic),
      ['t/3', 't/4', 't/5'],
    );
    for (const p of client.published.slice(1)) p.take();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(delivered, ['a3', 'a4', 'a5']);
    assert.equal(outbox.heldCount, 0);
  });

  it('when held messages pass the bytes bound then the oldest go', async () => {
    const client = new FakeClient();
    client.connected = false;
    const { outbox, dropped } = outboxOf(client, { maxHeld: 100, maxHeldBytes: 10 });
    for (let i = 0; i < 4; i++) await outbox.send('t', 'xxxx', `a${i}`);
    assert.equal(outbox.heldCount, 2);
    assert.equal(dropped(), 2);
  });

  it('when a message is held, in flight, taken or dropped then the outbox says whether it still carries its alert', async () => {
    const client = new FakeClient();
    client.connected = false;
    const { outbox } = outboxOf(client, { maxHeld: 2 });
    void outbox.send('t/1', 'one', 'a1');
    void outbox.send('t/2', 'two', 'a2');
    assert.equal(outbox.carries('a1'), true, 'held');
    void outbox.send('t/3', 'three', 'a3');
    assert.equal(outbox.carries('a1'), false, 'dropped past the bound: no message carries it any more');
    assert.equal(outbox.carries('a3'), true);
    client.connected = true;
    outbox.flush();
    assert.equal(outbox.carries('a2'), true, 'in flight');
    client.published[0]?.take();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(outbox.carries('a2'), false, 'taken by the broker');
    assert.equal(outbox.carries('a3'), true, 'still in flight');
  });

  it('when the last message held or in flight is taken while connected then the outbox says it is idle, once', async () => {
    const client = new FakeClient();
    let idle = 0;
    const outbox = new InstructionOutbox(
      client,
      { delivered: () => {}, dropped: () => {}, failed: (error) => assert.fail(error), idle: () => idle++ },
      { maxHeld: 1, maxHeldBytes: 1000, maxInFlight: 1, waitMs: 50 },
    );
    void outbox.send('t/1', 'one', 'a1');
    void outbox.send('t/2', 'two', 'a2');
    void outbox.send('t/3', 'three', 'a3');
    assert.equal(outbox.carries('a2'), false, 'dropped while connected: one in flight, one held');
    client.published[0]?.take();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(idle, 0, 'the held one is in flight now');
    client.published[1]?.take();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(idle, 1);
  });
});
