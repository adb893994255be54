/**
 * A device connection against an endpoint that records what it is told: a login being checked (the key
 * pair looked up in the store, which may be slow) reads no more from its device until the check is
 * done, and holds few packets meanwhile; a session's subscriptions are bounded; an instruction the
 * device refuses is not delivered.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { type ConnectionHost, DeviceConnection, type DeviceSocket } from '../../src/mqtt/endpoint/connection.ts';
import { DEFAULT_SESSION_LIMITS } from '../../src/mqtt/endpoint/endpoint.ts';
import { PartialPackets } from '../../src/mqtt/endpoint/packet-parser.ts';
import { MAX_SUBSCRIPTIONS, SessionStore } from '../../src/mqtt/endpoint/sessions.ts';
import { connectPacket, mqttPacket, parsePackets } from '../support/mqtt-packet.ts';

/** A socket that records what the connection does with it. */
class RecordingSocket extends EventEmitter implements DeviceSocket {
  writable = true;
  paused = false;
  pauses = 0;
  destroyed = false;
  readonly written: Buffer[] = [];
  write(bytes: Buffer): boolean {
    this.written.push(bytes);
    return true;
  }
  end(bytes?: Buffer): void {
    if (bytes) this.write(bytes);
  }
  destroy(): void {
    this.destroyed = true;
    this.writable = false;
    this.emit('close');
  }
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
  }
  setTimeout(): void {}
}

const pair = { access_key: 'ak-login', secret_key: 'sk-login' };

/** An endpoint whose key-pair lookups answer when the test says so. */
function slowLogin(partialBudget = 64 << 20) {
  let answer: (keyPair: { accessKey: string; secretKey: string }) => void = () => {};
  const sessions = new SessionStore(DEFAULT_SESSION_LIMITS);
  const delivered: string[] = [];
  const host = {
    admission: () => undefined,
    keyPairOf: () =>
      new Promise<{ accessKey: string; secretKey: string }>((resolve) => {
        answer = resolve;
      }),
    passwordMatches: () => true,
    openSession: (connection: DeviceConnection, cleanStart: boolean, expirySeconds: number | undefined) =>
      sessions.openFor(connection, cleanStart, expirySeconds),
    sessionExpiryMs: (seconds: number) => sessions.expiryFor(seconds),
    signedIn: () => {},
    received: () => {},
    refused: () => {},
    subscribed: () => {},
    delivered: (alertKey: string) => void delivered.push(alertKey),
    closed: () => {},
    packetBounds: {
      maxPacketBytes: 1 << 20,
      maxConnectPacketBytes: 128 * 1024,
      partial: new PartialPackets(partialBudget),
      refusedLength: () => {},
      refusedHeld: () => {},
    },
    limits: { connectTimeoutMs: 10_000, receiveMaximum: 100, maximumPacketSize: 1 << 20, topicAliasMaximum: 16 },
  } satisfies ConnectionHost;
  return { host, delivered, signIn: () => answer({ accessKey: pair.access_key, secretKey: pair.secret_key }) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const pings = (count: number) =>
  Buffer.concat(Array.from({ length: count }, () => mqttPacket.generate({ cmd: 'pingreq' })));

describe('a connection signing in', () => {
  it('when more comes while its login is being checked then its socket is paused, and read again once the device is signed in', async () => {
    const { host, signIn } = slowLogin();
    const socket = new RecordingSocket();
    const connection = new DeviceConnection(1, socket, host);
    socket.emit('data', Buffer.concat([connectPacket('c-login', pair), pings(1)]));
    assert.equal(connection.state, 'login');
    assert.equal(socket.paused, false, 'a device that sent nothing more is not paused');
    socket.emit('data', pings(2));
    assert.equal(socket.paused, true, 'once more comes, nothing more is read while the key pair is looked up');
    signIn();
    await tick();
    assert.equal(connection.state, 'open');
    assert.equal(socket.paused, false, 'reading goes on once signed in');
    // The CONNACK, then the answers of the packets that waited for the login.
    const answers = mqttPacket.generate({ cmd: 'pingresp' });
    await tick();
    const written = Buffer.concat(socket.written);
    assert.equal(written[0], 0x20, 'the CONNACK first');
    assert.equal(written.subarray(4).toString('hex'), Buffer.concat([answers, answers, answers]).toString('hex'));
  });

  it('when a device sends many packets with its CONNECT then its connection is closed before it holds them all', () => {
    const { host } = slowLogin();
    const socket = new RecordingSocket();
    const connection = new DeviceConnection(1, socket, host);
    socket.emit('data', Buffer.concat([connectPacket('c-many', pair), pings(5000)]));
    assert.equal(socket.destroyed, true);
    assert.equal(connection.state, 'closed');
  });
});

/** A connection of an MQTT 5 device, signed in, and the packets written to it from now on. */
async function signedIn(clientId: string) {
  const { host, delivered, signIn } = slowLogin();
  const socket = new RecordingSocket();
  const connection = new DeviceConnection(1, socket, host);
  socket.emit('data', connectPacket(clientId, pair, 60, { protocolVersion: 5 }));
  signIn();
  await tick();
  socket.written.length = 0;
  /** The packets written since the last call, after the next turn (the outbox writes then). */
  const written = async () => {
    await tick();
    const packets = parsePackets(Buffer.concat(socket.written), 5);
    socket.written.length = 0;
    return packets;
  };
  const send = (packet: Record<string, unknown>) =>
    socket.emit('data', mqttPacket.generate(packet as never, { protocolVersion: 5 }));
  return { connection, delivered, written, send };
}

const instructionTopic = (thing: string) => `Altizon/Datonis/${pair.access_key}/thing/${thing}/executeInstruction`;

describe("a session's subscriptions", () => {
  it(`when a device subscribes to more than ${MAX_SUBSCRIPTIONS} instruction topics then those past it are refused as quota exceeded`, async () => {
    const { send, written } = await signedIn('c-subs');
    const subscriptions = Array.from({ length: MAX_SUBSCRIPTIONS + 1 }, (_, i) => ({
      topic: instructionTopic(`t${i}`),
      qos: 1,
    }));
    send({ cmd: 'subscribe', messageId: 1, subscriptions });
    const suback = (await written()).find((p) => p.cmd === 'suback') as { granted: number[] };
    assert.equal(suback.granted.length, MAX_SUBSCRIPTIONS + 1);
    assert.deepEqual(suback.granted.slice(0, 2), [1, 1]);
    assert.equal(suback.granted[MAX_SUBSCRIPTIONS], 0x97);
    // One it holds already may change its QoS.
    send({ cmd: 'subscribe', messageId: 2, subscriptions: [{ topic: instructionTopic('t0'), qos: 2 }] });
    assert.deepEqual((await written()).find((p) => p.cmd === 'suback')?.granted, [2]);
  });
});

describe('an instruction sent to a device', () => {
  it('when the device refuses it (PUBREC 0x80 or more) then its flow ends and it is not delivered; taken, it is', async () => {
    const { connection, delivered, send, written } = await signedIn('c-instr');
    send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: instructionTopic('+'), qos: 2 }] });
    await written();
    connection.sendInstruction(instructionTopic('m1'), '{"alert_key":"a1"}', 'a1', 2);
    const refused = (await written()).find((p) => p.cmd === 'publish') as { messageId: number };
    send({ cmd: 'pubrec', messageId: refused.messageId, reasonCode: 0x87 });
    await written();
    assert.deepEqual(delivered, [], 'a refused instruction is not delivered');

    connection.sendInstruction(instructionTopic('m1'), '{"alert_key":"a2"}', 'a2', 2);
    const taken = (await written()).find((p) => p.cmd === 'publish') as { messageId: number };
    send({ cmd: 'pubrec', messageId: taken.messageId });
    assert.ok(
      (await written()).some((p) => p.cmd === 'pubrel'),
      'released',
    );
    send({ cmd: 'pubcomp', messageId: taken.messageId });
    await written();
    assert.deepEqual(delivered, ['a2']);
  });
});

/** A connection of `clientId` signed in with this CONNECT, on an endpoint of `login`. */
async function signIn(login: ReturnType<typeof slowLogin>, connect: Buffer) {
  const socket = new RecordingSocket();
  const connection = new DeviceConnection(1, socket, login.host);
  socket.emit('data', connect);
  login.signIn();
  await tick();
  return { socket, connection };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a device gone silent', () => {
  it('when it is sent an instruction after a silence past its keep-alive and a half then its connection is closed, the instruction not written; a session it keeps holds it', async () => {
    const login = slowLogin();
    // A keep-alive of one second: silent for more than 1.5 s, it is gone. A session kept (no clean start).
    const { socket, connection } = await signIn(login, connectPacket('c-silent', pair, 1, { clean: false }));
    socket.emit(
      'data',
      mqttPacket.generate({
        cmd: 'subscribe',
        messageId: 1,
        subscriptions: [{ topic: instructionTopic('+'), qos: 1 }],
      }),
    );
    connection.sendInstruction(instructionTopic('m1'), '{}', 'a1', 1);
    await tick();
    assert.equal(socket.destroyed, false, 'a device that spoke just now is sent its instruction');
    socket.emit('data', mqttPacket.generate({ cmd: 'puback', messageId: 1 }));
    await sleep(1600);
    socket.written.length = 0;
    connection.sendInstruction(instructionTopic('m1'), '{}', 'a2', 1);
    await tick();
    assert.equal(socket.destroyed, true);
    assert.deepEqual(socket.written, [], 'nothing is written to it');
    assert.equal(connection.session?.holds('a2'), true, 'its session keeps the instruction for its return');
  });

  it('when an MQTT 5 device told why its connection closes keeps sending then it is cut off all the same', async () => {
    const { socket, connection } = await signIn(
      slowLogin(),
      connectPacket('c-trickle', pair, 60, { protocolVersion: 5 }),
    );
    // A PUBLISH of QoS 3, which no MQTT has: malformed.
    socket.emit('data', Buffer.from([0x36, 2, 0, 0]));
    assert.equal(connection.state, 'closed');
    const told = parsePackets(Buffer.concat(socket.written), 5).find((p) => p.cmd === 'disconnect');
    assert.equal(told?.reasonCode, 0x81, 'told: malformed packet');
    for (let i = 0; i < 5 && !socket.destroyed; i++) {
      socket.emit('data', Buffer.from([0]));
      await sleep(500);
    }
    assert.equal(socket.destroyed, true, 'cut off within its two seconds, bytes or not');
  });
});

describe("the endpoint's budget of unfinished packets", () => {
  it('when an MQTT 5 connection is refused for passing it then its bytes leave the budget at once, not when its socket closes', async () => {
    const login = slowLogin(10_000);
    const b = await signIn(login, connectPacket('c-b', pair));
    const a = await signIn(login, connectPacket('c-a', pair, 60, { protocolVersion: 5 }));
    // The beginning of a publish of 20,000 bytes: B holds 3,000 of it, A then 9,000, past the budget.
    const partialPublish = (bytes: number) =>
      Buffer.concat([Buffer.from([0x30, 0xa0, 0x9c, 0x01]), Buffer.alloc(bytes - 4)]);
    b.socket.emit('data', partialPublish(3000));
    const heldByB = login.host.packetBounds.partial.held;
    assert.ok(heldByB > 2900, 'B holds its unfinished packet');
    a.socket.emit('data', partialPublish(9000));
    assert.equal(a.connection.state, 'closed', 'the one that passed it is refused');
    assert.equal(b.connection.state, 'open');
    assert.equal(login.host.packetBounds.partial.held, heldByB, "only B's bytes are held");
  });

  it('when a WebSocket holds a message not yet complete then its bytes count, and one past the budget is refused', async () => {
    const login = slowLogin(10_000);
    const b = await signIn(login, connectPacket('c-wb', pair));
    const a = await signIn(login, connectPacket('c-wa', pair));
    b.socket.emit('held', 3000);
    assert.equal(login.host.packetBounds.partial.held, 3000);
    b.socket.emit('held', 0);
    assert.equal(login.host.packetBounds.partial.held, 0, 'its message complete, nothing is held');
    b.socket.emit('held', 3000);
    a.socket.emit('held', 9000);
    assert.equal(a.connection.state, 'closed', 'the one that passed it is refused');
    assert.equal(b.connection.state, 'open');
    assert.equal(login.host.packetBounds.partial.held, 3000);
  });
});
