import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { sendAgainLater } from '../../src/core/errors.ts';
import type { DeviceAuthenticator, DeviceCredentials } from '../../src/devices/authentication.ts';
import type { DeviceService } from '../../src/devices/service.ts';
import { DeviceMessages, type MessageSource } from '../../src/mqtt/endpoint/device-messages.ts';
import { InboundFlow } from '../../src/mqtt/inbound-flow.ts';
import type { Ack } from '../../src/mqtt/signed-messages.ts';
import { parseDeviceTopic } from '../../src/mqtt/topics.ts';

/** A connection as the endpoint's messages see it, recording what they ask of it. */
class Source implements MessageSource {
  readonly answers: Ack[] = [];
  /** Whether its reads are held now. */
  holding = false;
  holds = 0;
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

describe('the device endpoint holds the reads of a connection it cannot take more from', () => {
  it('when an event is refused for its share of a busy writer then the connection is held, and released once it has waited', async () => {
    let refusal: string | undefined = 'server busy: this client holds its share';
    const messages = new DeviceMessages(
      heldService().devices,
      authenticator,
      new InboundFlow({ perConnection: 100, messages: 1000, bytes: 1 << 20, maxWaitMs: 500 }),
      pino({ level: 'silent' }),
      () => refusal,
    );
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
