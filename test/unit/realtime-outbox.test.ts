import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loggedUrl } from '../../src/core/urls.ts';
import { MAX_WAITING, MAX_WAITING_BYTES, Outbox, type Outgoing } from '../../src/realtime/outbox.ts';

/** A transport that takes messages while `open`, and keeps what it took. */
function transport() {
  const sent: Outgoing[] = [];
  const state = { open: true };
  return {
    sent,
    state,
    writable: () => state.open,
    send: (m: Outgoing): void => {
      sent.push(m);
    },
  };
}

const event = (id: string, n: number): Outgoing => ({
  id,
  type: 'event',
  text: JSON.stringify({ type: 'event', id, n }),
});

describe('realtime outbox', () => {
  it('when the transport takes messages then they go straight through, in order', () => {
    const t = transport();
    const outbox = new Outbox(t);
    for (let n = 0; n < 5; n++) outbox.push(event('a', n));
    assert.equal(outbox.length, 0);
    assert.deepEqual(
      t.sent.map((m) => JSON.parse(m.text).n),
      [0, 1, 2, 3, 4],
    );
  });

  it('when the transport stalls then messages wait, and go in order once it takes them again', () => {
    const t = transport();
    const outbox = new Outbox(t);
    t.state.open = false;
    for (let n = 0; n < 100; n++) outbox.push(event('a', n));
    assert.equal(t.sent.length, 0);
    assert.equal(outbox.length, 100);
    t.state.open = true;
    outbox.pump();
    assert.equal(outbox.length, 0);
    assert.deepEqual(
      t.sent.map((m) => JSON.parse(m.text).n),
      Array.from({ length: 100 }, (_, n) => n),
    );
  });

  it('when more than 10,000 wait then the oldest are dropped and each subscription is told how many first', () => {
    const t = transport();
    const outbox = new Outbox(t);
    t.state.open = false;
    for (let n = 0; n < MAX_WAITING + 300; n++) outbox.push(event(n < 200 ? 'a' : 'b', n));
    assert.equal(outbox.length, MAX_WAITING);
    assert.equal(outbox.droppedInAll, 300);
    t.state.open = true;
    outbox.pump();
    const [first, second, third] = t.sent.map((m) => JSON.parse(m.text));
    assert.deepEqual(first, { type: 'overflow', id: 'a', dropped: 200 });
    assert.deepEqual(second, { type: 'overflow', id: 'b', dropped: 100 });
    assert.equal(third.n, 300, 'the newest are kept');
    assert.equal(t.sent.length, MAX_WAITING + 2);
  });

  it('when large messages wait then their text is bounded too', () => {
    const t = transport();
    const outbox = new Outbox(t);
    t.state.open = false;
    const big = 'x'.repeat(1024 * 1024);
    for (let n = 0; n < 40; n++) outbox.push({ id: 'a', type: 'event', text: `${n}:${big}` });
    assert.ok(outbox.length * big.length <= MAX_WAITING_BYTES, `${outbox.length} large messages wait`);
    assert.ok(outbox.length > 0);
  });

  it('when a long backlog drains bit by bit then nothing is lost or repeated', () => {
    const t = transport();
    const outbox = new Outbox(t);
    t.state.open = false;
    for (let n = 0; n < 9000; n++) outbox.push(event('a', n));
    // The transport takes 7 messages per turn.
    while (outbox.length > 0) {
      let room = 7;
      t.state.open = true;
      const send = t.send;
      t.send = (m) => {
        send(m);
        if (--room === 0) t.state.open = false;
      };
      outbox.pump();
      t.send = send;
    }
    assert.deepEqual(
      t.sent.map((m) => JSON.parse(m.text).n),
      Array.from({ length: 9000 }, (_, n) => n),
    );
  });
});

describe('logged URLs', () => {
  it('when a URL carries a token parameter then logs show it redacted, and the rest as it was', () => {
    assert.equal(loggedUrl('/api/v3/stream?topic=events&token=s3cr3t'), '/api/v3/stream?topic=events&token=[redacted]');
    assert.equal(loggedUrl('/api/v3/stream?token=s3cr3t&topic=events'), '/api/v3/stream?token=[redacted]&topic=events');
    assert.equal(loggedUrl('/api/v3/things?page=2'), '/api/v3/things?page=2');
  });
});
