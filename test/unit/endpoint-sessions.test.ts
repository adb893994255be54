import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type OutgoingMessage, type SessionLimits, SessionStore } from '../../src/mqtt/endpoint/sessions.ts';

const limits: SessionLimits = { maxKept: 3, maxMessages: 4, maxExpiryMs: 60_000 };
const answer = (n: number): OutgoingMessage => ({ topic: 'Altizon/Datonis/d/httpAck', payload: `a${n}`, qos: 1 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('device endpoint sessions', () => {
  it('when a client id comes back without a clean start then it resumes its session, subscriptions and messages in flight', () => {
    const store = new SessionStore(limits);
    const [first, second] = [{}, {}];
    const opened = store.open(first, 'd1', 'ak', false, 60_000);
    assert.equal(opened.present, false, 'nothing to resume the first time');
    opened.session.ackQos = 1;
    opened.session.subscribe('Altizon/Datonis/ak/thing/+/executeInstruction', 2);
    const id = opened.session.send({ ...answer(1), qos: 2, alertKey: 'alert-1' }) as number;
    store.detach(opened.session, first);
    assert.equal(store.keptCount, 1);
    const again = store.open(second, 'd1', 'ak', false, 60_000);
    assert.equal(again.present, true);
    assert.equal(again.session, opened.session);
    assert.equal(again.session.ackQos, 1);
    assert.equal(again.session.instructionQos('Altizon/Datonis/ak/thing/t1/executeInstruction'), 2);
    assert.equal(again.session.acknowledged(id)?.alertKey, 'alert-1');
    assert.equal(again.session.acknowledged(id), undefined, 'acknowledged once');
    assert.equal(store.keptCount, 0, 'a resumed session has a connection again');
  });

  it('when a client id asks for a clean start, signs in with another access key, or kept no session then nothing is resumed', () => {
    const store = new SessionStore(limits);
    const a = store.open({}, 'd1', 'ak', false, 60_000);
    store.detach(a.session, a.session.holder as object);
    const clean = store.open({}, 'd1', 'ak', true, 60_000);
    assert.equal(clean.present, false);
    assert.notEqual(clean.session, a.session);
    store.detach(clean.session, clean.session.holder as object);
    const other = store.open({}, 'd1', 'another key', false, 60_000);
    assert.equal(other.present, false, "another key pair's device gets none of it");
    store.detach(other.session, other.session.holder as object);
    const brief = store.open({}, 'd2', 'ak', false, 0);
    store.detach(brief.session, brief.session.holder as object);
    assert.equal(store.open({}, 'd2', 'ak', false, 0).present, false, 'an expiry of 0 ends with the connection');
  });

  it('when a connection takes over a session still held by another then the older one closing leaves it kept', () => {
    const store = new SessionStore(limits);
    const [older, newer] = [{}, {}];
    const first = store.open(older, 'd1', 'ak', false, 60_000);
    const taken = store.open(newer, 'd1', 'ak', false, 60_000);
    assert.equal(taken.present, true);
    store.detach(first.session, older);
    assert.equal(taken.session.holder, newer);
    assert.equal(store.keptCount, 0);
    store.detach(taken.session, newer);
    assert.equal(store.open({}, 'd1', 'ak', false, 60_000).present, true);
  });

  it('when its expiry passes then the session ends', async () => {
    const store = new SessionStore(limits);
    const opened = store.open({}, 'd1', 'ak', false, 30);
    store.detach(opened.session, opened.session.holder as object);
    await sleep(80);
    assert.equal(store.keptCount, 0);
    assert.equal(store.open({}, 'd1', 'ak', false, 30).present, false);
  });

  it('when more sessions are kept than allowed then the one gone longest ends first', () => {
    const store = new SessionStore(limits);
    for (const clientId of ['d1', 'd2', 'd3', 'd4']) {
      const opened = store.open({}, clientId, 'ak', false, 60_000);
      store.detach(opened.session, opened.session.holder as object);
    }
    assert.equal(store.keptCount, 3);
    assert.equal(store.open({}, 'd1', 'ak', false, 60_000).present, false, 'the oldest was dropped');
    assert.equal(store.open({}, 'd4', 'ak', false, 60_000).present, true);
  });

  it('when a session holds more messages than allowed then the oldest queued go first, then the oldest in flight', () => {
    const store = new SessionStore(limits);
    const { session } = store.open({}, 'd1', 'ak', false, 60_000);
    const first = session.send(answer(1)) as number;
    session.send(answer(2));
    for (const n of [3, 4, 5]) session.queue(answer(n));
    assert.deepEqual(
      session.queued.map((m) => m.payload),
      ['a4', 'a5'],
    );
    assert.equal(session.inFlight.size, 2);
    session.takeQueued();
    for (const n of [6, 7, 8]) session.send(answer(n));
    assert.equal(session.inFlight.size, 4);
    assert.equal(session.acknowledged(first), undefined, 'the oldest in flight was let go');
  });

  it('when a session holds more messages than allowed then answers go before instructions, and an instruction in flight never', () => {
    const store = new SessionStore(limits);
    const { session } = store.open({}, 'd1', 'ak', false, 60_000);
    const instruction = (n: number): OutgoingMessage => ({ ...answer(n), qos: 2, alertKey: `k${n}` });
    const first = session.send(instruction(1)) as number;
    session.release(first);
    for (const n of [2, 3, 4, 5]) session.send(answer(n));
    assert.equal(session.inFlight.get(first)?.alertKey, 'k1', 'the instruction awaiting its PUBCOMP is kept');
    assert.deepEqual(
      [...session.inFlight.values()].map((m) => m.payload),
      ['a1', 'a3', 'a4', 'a5'],
    );
    for (const n of [6, 7, 8]) session.send(instruction(n));
    assert.equal(session.send(instruction(9)), undefined, 'no more instructions in flight than it holds');
    assert.deepEqual(
      [...session.inFlight.values()].map((m) => m.alertKey),
      ['k1', 'k6', 'k7', 'k8'],
    );
    session.queue(answer(10));
    assert.equal(session.queued.length, 0, 'an answer goes first');
  });

  it('when a will waits for its delay then it goes after it, when its session ends, and not when a connection of its client id comes', async () => {
    const store = new SessionStore({ ...limits, maxExpiryMs: 60_000 });
    const sent: string[] = [];
    const gone = (clientId: string, expiryMs: number, delayMs: number) => {
      const holder = {};
      const { session } = store.open(holder, clientId, 'ak', false, expiryMs);
      session.leaveWill(delayMs, () => sent.push(clientId));
      store.detach(session, holder);
    };
    gone('delayed', 60_000, 50);
    gone('back', 60_000, 50);
    gone('ends', 30, 60_000);
    store.open({}, 'back', 'ak', false, 60_000);
    assert.deepEqual(sent, []);
    await sleep(150);
    assert.deepEqual(sent.sort(), ['delayed', 'ends']);
  });

  it('when packet ids wrap then one still in flight is not taken again', () => {
    const store = new SessionStore(limits);
    const { session } = store.open({}, 'd1', 'ak', false, 60_000);
    const kept = session.send(answer(1)) as number;
    session.ids._nextId = kept;
    const next = session.send(answer(2));
    assert.notEqual(next, kept);
  });

  it('when a QoS 2 message comes again before its PUBREL then it is known; after it, it is new', () => {
    const { session } = new SessionStore(limits).open({}, 'd1', 'ak', true, 0);
    assert.equal(session.receivedQos2(9), false);
    assert.equal(session.receivedQos2(9), true, 'sent again before its release');
    session.releasedQos2(9);
    assert.equal(session.receivedQos2(9), false);
  });

  it('when MQTT 5 asks for a longer expiry than kept then it gets the longest kept', () => {
    const store = new SessionStore(limits);
    assert.equal(store.expiryFor(10), 10_000);
    assert.equal(store.expiryFor(0xffffffff), 60_000);
    assert.equal(store.expiryFor(undefined), 60_000, "MQTT 3.1.1's kept session");
  });
});
