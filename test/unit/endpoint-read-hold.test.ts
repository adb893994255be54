import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { sendAgainLater } from '../../src/core/errors.ts';
import type { DeviceAuthenticator, DeviceCredentials } from '../../src/devices/authentication.ts';
import type { DeviceService } from '../../src/devices/service.ts';
import { AnswerOrder } from '../../src/mqtt/endpoint/answer-order.ts';
import { DeviceMessages, type MessageSource } from '../../src/mqtt/endpoint/device-messages.ts';
import { InboundFlow } from '../../src/mqtt/inbound-flow.ts';
import type { Ack } from '../../src/mqtt/signed-messages.ts';
import { parseDeviceTopic } from '../../src/mqtt/topics.ts';

/** A connection as the endpoint's messages see it, recording what they ask of it. */
class Source implements MessageSource {
  readonly answers: Ack[] = [];
  readonly answerOrder = new AnswerOrder();
  /** Whether its reads are held now. */
  holding = false;
  holds = 0;
  /** Called when its reads are released. */
  onRelease: () => void = () => {};
  constructor(
    readonly id: number,
    readonly accessKey = 'ak',
    readonly secretKey = 'sk',
  ) {}
  answer(ack: Ack): void {
    this.answers.push(ack);
  }
  close(): void {}
  holdReading(): void {
    this.holding = true;
    this.holds++;
  }
  releaseReading(): void {
    this.holding = false;
    this.onRelease();
  }
  get readingHeld(): boolean {
    return this.holding;
  }
}

const credentials = { principal: { organisationKey: 'org' }, accessKey: 'ak', secretKey: 'sk' } as DeviceCredentials;
const authenticator = {
  recentCredentials: () => credentials,
  credentials: async () => credentials,
} as unknown as DeviceAuthenticator;

/** A device service whose heartbeats are answered when the test says so. */
function heldService() {
  const waiting: (() => void)[] = [];
  const devices = {
    heartbeat: () => new Promise<void>((resolve) => waiting.push(resolve)),
  } as unknown as DeviceService;
  return { devices, answerOne: () => waiting.shift()?.() };
}

const topic = (kind: string) =>
  parseDeviceTopic(`Altizon/Datonis/c1/${kind}`) as NonNullable<ReturnType<typeof parseDeviceTopic>>;
/** A message of the device; signed or not, the endpoint takes it on a signed-in connection (its hash is the context). */
const message = (n: number, hash = true) =>
  Buffer.from(hash ? `{"thing_key":"t","timestamp":${n},"hash":"h${n}"}` : `{"thing_key":"t","timestamp":${n}}`);
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** The endpoint's messages with a writer that refuses an event for the reason `refusal` gives, if any. */
const refusingMessages = (refusal: () => string | undefined) =>
  new DeviceMessages(
    heldService().devices,
    authenticator,
    new InboundFlow({ perConnection: 100, messages: 1000, bytes: 1 << 20, maxWaitMs: 500 }),
    pino({ level: 'silent' }),
    refusal,
  );

describe('the device endpoint holds the reads of a connection it cannot take more from', () => {
  it('when an event is refused for its share of a busy writer then the connection is held, and released once it has waited', async () => {
    let refusal: string | undefined = 'server busy: this client holds its share';
    const messages = refusingMessages(() => refusal);
    const greedy = new Source(1);
    messages.receive(greedy, topic('event'), message(1));
    assert.equal(greedy.answers[0]?.http_code, 503);
    assert.equal(greedy.answers[0]?.context, 'h1');
    assert.equal(greedy.holding, true, 'nothing more is read from it');
    refusal = undefined;
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(greedy.holding, false, 'read again once it has waited');
  });

  it('when a connection has many messages being done then it is held, and released once half of them are answered', async () => {
    const { devices, answerOne } = heldService();
    const inbound = new InboundFlow({ perConnection: 1000, messages: 10_000, bytes: 1 << 20, maxWaitMs: 500 });
    const messages = new DeviceMessages(devices, authenticator, inbound, pino({ level: 'silent' }));
    const busy = new Source(1);
    const calm = new Source(2);
    let sent = 0;
    while (!busy.holding && sent < 100) messages.receive(busy, topic('heartbeat'), message(++sent, false));
    assert.ok(sent > 1 && sent < 100, `held after ${sent} messages`);
    messages.receive(calm, topic('heartbeat'), message(1000, false));
    assert.equal(calm.holding, false, 'a connection with one message is not held');
    // Answered one by one: held until no more than half of those being done wait.
    let answered = 0;
    while (busy.holding && answered < sent) {
      answerOne();
      answered++;
      await tick();
    }
    assert.equal(busy.holding, false);
    assert.ok(answered >= sent / 2 && answered < sent, `released after ${answered} of ${sent} answers`);
    assert.equal(busy.answers.length, answered);
    assert.ok(busy.answers.every((ack) => ack.http_code === 200));
  });

  it('when a message taken is refused later by the writer then the connection is held', async () => {
    const inbound = new InboundFlow({ perConnection: 1000, messages: 10_000, bytes: 1 << 20, maxWaitMs: 500 });
    const devices = {
      heartbeat: () => Promise.reject(sendAgainLater('the store is behind; send again shortly')),
    } as unknown as DeviceService;
    const messages = new DeviceMessages(devices, authenticator, inbound, pino({ level: 'silent' }));
    const source = new Source(1);
    messages.receive(source, topic('heartbeat'), message(1, false));
    await tick();
    await tick();
    assert.equal(source.answers.length, 1);
    assert.equal(source.answers[0]?.http_code, 503);
    assert.equal(source.holding, true);
  });

  it('when many held connections are due to be read again at once then a few are released on each turn of the event loop', async () => {
    let refusal: string | undefined = 'server busy: this organisation holds its share';
    const messages = refusingMessages(() => refusal);
    const flood = Array.from({ length: 20 }, (_, i) => new Source(i + 1));
    for (const source of flood) messages.receive(source, topic('event'), message(source.id));
    assert.ok(flood.every((source) => source.holding && source.answers[0]?.http_code === 503));
    refusal = undefined;
    // Each turn of the event loop numbered, until all are read again after the hold's time.
    let turn = 0;
    const releasedOn = new Map<number, number>();
    for (const source of flood) source.onRelease = () => releasedOn.set(source.id, turn);
    while (releasedOn.size < flood.length && turn < 100_000) {
      await tick();
      turn++;
    }
    assert.equal(releasedOn.size, flood.length, 'all read again in the end');
    const perTurn = new Map<number, number>();
    for (const on of releasedOn.values()) perTurn.set(on, (perTurn.get(on) ?? 0) + 1);
    const counts = [...perTurn.values()];
    assert.ok(
      counts.every((count) => count <= 4),
      `at most four a turn: ${counts.join(' ')}`,
    );
    assert.ok(counts.length >= 5, `over five turns at least: ${counts.join(' ')}`);
  });

  it('when a connection due to be read again is refused meanwhile then it stays held', async () => {
    const { devices, answerOne } = heldService();
    const inbound = new InboundFlow({ perConnection: 1000, messages: 10_000, bytes: 1 << 20, maxWaitMs: 500 });
    let refusal: string | undefined;
    const messages = new DeviceMessages(devices, authenticator, inbound, pino({ level: 'silent' }), () => refusal);
    const busy = new Source(1);
    let sent = 0;
    while (!busy.holding && sent < 100) messages.receive(busy, topic('heartbeat'), message(++sent, false));
    // Answered to half of them, all at once: due to be read again on the next turn.
    for (let i = 0; i < sent / 2; i++) answerOne();
    await Promise.resolve();
    await Promise.resolve();
    assert.equal(busy.holding, true, 'not read again on the turn of its answers');
    refusal = 'server busy: this organisation holds its share';
    messages.receive(busy, topic('event'), message(1000));
    assert.equal(busy.answers.at(-1)?.http_code, 503);
    await tick();
    await tick();
    assert.equal(busy.holding, true, 'held by the refusal, not released by the answers before it');
  });

  it('when the server stops then refused connections are not held: they are about to be closed', () => {
    const messages = new DeviceMessages(
      heldService().devices,
      authenticator,
      new InboundFlow({ perConnection: 100, messages: 1000, bytes: 1 << 20, maxWaitMs: 500 }),
      pino({ level: 'silent' }),
    );
    messages.stopping = true;
    const source = new Source(1);
    messages.receive(source, topic('event'), message(1));
    assert.equal(source.answers[0]?.http_code, 503);
    assert.equal(source.holds, 0);
  });
});

describe("a connection's answers in the order of its messages", () => {
  it('when messages are done in any order then their answers leave in the order they were read, each once, and refusals at once', () => {
    for (let round = 0; round < 200; round++) {
      const order = new AnswerOrder();
      const sent: Ack[] = [];
      const to = { answer: (ack: Ack) => sent.push(ack) };
      const count = 1 + Math.floor(Math.random() * 12);
      const numbers = Array.from({ length: count }, () => order.next());
      const done = [...numbers].sort(() => Math.random() - 0.5);
      // Some are refusals for overload, answered as soon as they are read.
      const atOnce = new Set(numbers.filter(() => Math.random() < 0.25));
      for (const number of done) {
        const ack = { context: String(number), http_code: atOnce.has(number) ? 503 : 200, http_msg: {} };
        const before = sent.length;
        if (atOnce.has(number)) order.answerAtOnce(number, ack, to);
        else order.answer(number, ack, to);
        // Whatever has left of the others is theirs from the first on, with none missing.
        const taken = numbers.filter((n) => !atOnce.has(n));
        const left = sent.filter((a) => a.http_code === 200).map((a) => Number(a.context));
        assert.deepEqual(left, taken.slice(0, left.length));
        if (atOnce.has(number)) assert.equal(sent[before], ack, 'a refusal leaves at once');
      }
      assert.deepEqual(
        sent.filter((a) => a.http_code === 200).map((a) => Number(a.context)),
        numbers.filter((n) => !atOnce.has(n)),
        `done in the order ${done.join(', ')}`,
      );
      assert.equal(sent.length, count, 'each once');
    }
  });
});
