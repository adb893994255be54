import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactSecretParams } from '../../src/core/urls.ts';
import {
  MAX_KEPT_REPLIES,
  MAX_WAITING,
  MAX_WAITING_BYTES,
  MAX_WAITING_BYTES_IN_ALL,
  Outbox,
  type Outgoing,
} from '../../src/realtime/outbox.ts';

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

/** An outbox whose pumping runs at once, where the server would run it a moment later. */
const outboxOf = (t: ReturnType<typeof transport>) => new Outbox(t, (outbox) => outbox.pump());

const event = (id: string, n: number): Outgoing => ({
  id,
  type: 'event',
  text: JSON.stringify({ type: 'event', id, n }),
});

describe('realtime outbox', () => {
  it('when the transport takes messages then they go straight through, in order', () => {
    const t = transport();
    const outbox = outboxOf(t);
    for (let n = 0; n < 5; n++) outbox.push(event('a', n));
    assert.equal(outbox.length, 0);
    assert.deepEqual(
      t.sent.map((m) => JSON.parse(m.text).n),
      [0, 1, 2, 3, 4],
    );
  });

  it('when events are dropped then the replies among them are kept, sent first in their order, up to a bound', () => {
    const t = transport();
    const outbox = outboxOf(t);
    t.state.open = false;
    const reply = (n: number): Outgoing => ({ id: '', type: 'subscribed', text: `{"n":${n}}`, reply: true });
    outbox.push(reply(0));
    for (let n = 0; n < MAX_WAITING; n++) outbox.push(event('a', n));
    outbox.push(reply(1));
    for (let n = 0; n < MAX_WAITING; n++) outbox.push(event('a', n));
    t.state.open = true;
    outbox.pump();
    assert.deepEqual(
      t.sent.slice(0, 3).map((m) => [m.type, m.text]),
      [
        ['subscribed', '{"n":0}'],
        ['subscribed', '{"n":1}'],
        ['overflow', `{"type":"overflow","id":"a","dropped":${MAX_WAITING}}`],
      ],
    );
    assert.equal(t.sent.length, 3 + MAX_WAITING);
    // A client that sends and never reads: past the bound, replies are dropped too (counted under "").
    t.state.open = false;
    t.sent.length = 0;
    // Events of a MiB: a few past the bytes an outbox holds drop the reply before them.
    const big: Outgoing = { id: 'b', type: 'event', text: 'x'.repeat(1024 * 1024) };
    for (let n = 0; n < MAX_KEPT_REPLIES + 5; n++) {
      outbox.push(reply(n));
      for (let e = 0; e <= MAX_WAITING_BYTES / big.text.length; e++) outbox.push(big);
    }
    t.state.open = true;
    outbox.pump();
    assert.equal(t.sent.filter((m) => m.type === 'subscribed').length, MAX_KEPT_REPLIES);
    assert.ok(t.sent.some((m) => m.type === 'overflow' && m.id === ''));
  });

  it('when the transport stalls then messages wait, and go in order once it takes them again', () => {
    const t = transport();
    const outbox = outboxOf(t);
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
    const outbox = outboxOf(t);
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

  it('when messages are pushed then the shared pumper sends them soon after, corked together', async () => {
    const t = transport();
    let corks = 0;
    const outbox = new Outbox({ ...t, cork: () => corks++, uncork: () => {} });
    for (let n = 0; n < 1000; n++) outbox.push(event('a', n));
    assert.equal(t.sent.length, 0, 'not where they are made');
    // Soon, but how soon depends on the machine: a loaded one gives the pumper's slices less time.
    const started = performance.now();
    while (t.sent.length < 1000 && performance.now() - started < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(t.sent.length, 1000);
    assert.ok(corks >= 1 && corks <= 4, `${corks} turns for 1,000 messages`);
  });

  it('when sending is slow then the pumper works in slices, takes turns between outboxes and loses nothing', async () => {
    const sent: string[] = [];
    const slow = (name: string) => ({
      writable: () => true,
      send: (m: Outgoing) => {
        const until = performance.now() + 0.2;
        while (performance.now() < until) {
          // a socket write that takes a while
        }
        sent.push(`${name}:${JSON.parse(m.text).n}`);
      },
    });
    const outboxes = ['a', 'b', 'c'].map((name) => new Outbox(slow(name)));
    for (let n = 0; n < 300; n++) for (const outbox of outboxes) outbox.push(event('x', n));
    let timers = 0;
    const started = performance.now();
    while (sent.length < 900 && performance.now() - started < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      timers++;
    }
    assert.equal(sent.length, 900);
    for (const name of ['a', 'b', 'c']) {
      assert.deepEqual(
        sent.filter((s) => s.startsWith(`${name}:`)).map((s) => Number(s.slice(2))),
        Array.from({ length: 300 }, (_, n) => n),
      );
    }
    assert.ok(timers > 3, 'other work ran between the slices');
    assert.ok(sent.indexOf('b:0') < sent.indexOf('a:299'), 'outboxes take turns (of 256 messages)');
  });

  it('when large messages wait then their text is bounded too', () => {
    const t = transport();
    const outbox = outboxOf(t);
    t.state.open = false;
    const big = 'x'.repeat(1024 * 1024);
    for (let n = 0; n < 40; n++) outbox.push({ id: 'a', type: 'event', text: `${n}:${big}` });
    assert.ok(outbox.length * big.length <= MAX_WAITING_BYTES, `${outbox.length} large messages wait`);
    assert.ok(outbox.length > 0);
    // What waits counts for every outbox of the process: the next tests start from none.
    outbox.clear();
  });

  it('when outboxes together hold more than their shared bound then each push drops the oldest of its own', () => {
    const t = transport();
    t.state.open = false;
    const outboxes = Array.from({ length: 12 }, () => outboxOf(t));
    const text = 'x'.repeat(1024 * 1024);
    for (let n = 0; n < 15; n++) for (const outbox of outboxes) outbox.push({ id: 'a', type: 'event', text });
    const waiting = outboxes.reduce((sum, o) => sum + o.length, 0);
    assert.ok(waiting * text.length <= MAX_WAITING_BYTES_IN_ALL + 12 * text.length, `${waiting} MiB wait in all`);
    for (const outbox of outboxes) outbox.clear();
    const fresh = outboxOf(t);
    for (let n = 0; n < 15; n++) fresh.push({ id: 'a', type: 'event', text });
    assert.equal(fresh.length, 15, 'cleared outboxes no longer count');
    fresh.clear();
  });

  it('when outboxes that are never read fill the shared bound then an outbox holding less than its share keeps its messages', () => {
    const stalled = transport();
    stalled.state.open = false;
    const hogs = Array.from({ length: 9 }, () => outboxOf(stalled));
    const text = 'x'.repeat(1024 * 1024);
    for (let n = 0; n < 16; n++) for (const hog of hogs) hog.push({ id: 'a', type: 'event', text });
    const reader = transport();
    reader.state.open = false;
    const another = outboxOf(reader);
    // Ten messages of another client, waiting a moment while the shared bound is passed.
    for (let n = 0; n < 10; n++) another.push(event('b', n));
    assert.equal(another.length, 10, 'none of its messages was dropped');
    for (const hog of hogs) hog.push({ id: 'a', type: 'event', text });
    const waiting = hogs.reduce((sum, o) => sum + o.length, 0);
    assert.ok(waiting * text.length <= MAX_WAITING_BYTES_IN_ALL + 9 * text.length, `${waiting} MiB wait in all`);
    reader.state.open = true;
    another.pump();
    assert.deepEqual(
      reader.sent.map((m) => m.type),
      Array(10).fill('event'),
      'no overflow',
    );
    for (const hog of hogs) hog.clear();
    another.clear();
  });

  it('when a long backlog drains bit by bit then nothing is lost or repeated', () => {
    const t = transport();
    const outbox = outboxOf(t);
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
    assert.equal(
      redactSecretParams('/api/v3/stream?topic=events&token=s3cr3t'),
      '/api/v3/stream?topic=events&token=[redacted]',
    );
    assert.equal(
      redactSecretParams('/api/v3/stream?token=s3cr3t&topic=events'),
      '/api/v3/stream?token=[redacted]&topic=events',
    );
    assert.equal(redactSecretParams('/api/v3/things?page=2'), '/api/v3/things?page=2');
    // Secrets of other requests, as any parameter may come in the query string.
    assert.equal(
      redactSecretParams('/api_sign_in?email=a%40b.c&password=Pw1234567%21'),
      '/api_sign_in?email=a%40b.c&password=[redacted]',
    );
    assert.equal(
      redactSecretParams('/api/v3/users/k1?user=%7B%22passw%6Frd%22%3A%22x%22%7D&pretty=true'),
      '/api/v3/users/k1?user=[redacted]&pretty=true',
    );
    assert.equal(
      redactSecretParams('/azure_api_sign_in?client_id=a&code=s3cr3t'),
      '/azure_api_sign_in?client_id=a&code=[redacted]',
    );
    // Names the query parser reads as the token, however they are spelt.
    assert.equal(
      redactSecretParams('/api/v3/stream?topic=things&toke%6E=s3cr3t'),
      '/api/v3/stream?topic=things&toke%6E=[redacted]',
    );
    assert.equal(
      redactSecretParams('/api/v3/stream?token%5B%5D=s3cr3t&a=1'),
      '/api/v3/stream?token%5B%5D=[redacted]&a=1',
    );
    assert.equal(redactSecretParams('/api/v3/stream?%74oken=s3cr3t'), '/api/v3/stream?%74oken=[redacted]');
    assert.equal(
      redactSecretParams('/api/v3/stream?token=a&token=b'),
      '/api/v3/stream?token=[redacted]&token=[redacted]',
    );
    assert.equal(redactSecretParams('/api/v3/stream?tok%zzen=x'), '/api/v3/stream?tok%zzen=x');
  });
});
