/**
 * The device endpoint against MQTT 5 and MQTT over WebSocket, written from docs/devices.md ("MQTT", "The
 * device endpoint") and, where it is silent, from the MQTT 5 specification's rules for a server (its
 * sections and [MQTT-x.y.z-n] statements are named in the tests). A difference found is kept as a
 * `todo` test saying how the endpoint differs, until it is changed.
 * Packets are made and read with mqtt-packet on a raw socket or WebSocket, so that what a client library
 * would hide (reason codes, properties, packet sizes, what is in flight) is seen as sent.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { afterEach, it } from 'node:test';
import WebSocket from 'ws';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { MqttDevice, signedEnvelope } from '../support/mqtt-device.ts';
import { mqttPacket } from '../support/mqtt-packet.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

type Version = 4 | 5;

/** A packet as mqtt-packet reads it. */
interface Packet {
  cmd: string;
  /** The remaining length. */
  length: number;
  messageId?: number;
  reasonCode?: number;
  returnCode?: number;
  sessionPresent?: boolean;
  topic?: string;
  payload?: Buffer;
  qos?: number;
  dup?: boolean;
  granted?: number[];
  properties?: Record<string, any>;
}

/** One connection to the endpoint, over TCP or WebSocket, and everything it received. */
interface Wire {
  version: Version;
  received: Packet[];
  /** Every byte received, as it came. */
  bytes(): Buffer;
  /** What mqtt-packet could not read of what came. */
  parseErrors: Error[];
  closed: Promise<void>;
  isClosed(): boolean;
  write(bytes: Buffer): void;
  send(packet: Record<string, unknown>): void;
  onPacket(listener: (packet: Packet) => void): void;
  end(): void;
}

/** The Maximum Packet Size docs/devices.md gives: 10 MiB and 64 KiB. */
const MAX_PACKET = 10 * 1024 * 1024 + 64 * 1024;
/** MQTT_SESSION_EXPIRY of the suite's server, in seconds. */
const SESSION_EXPIRY = 3600;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A variable byte integer (MQTT §1.5.5). */
const varint = (value: number) => {
  const bytes: number[] = [];
  do {
    let digit = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) digit |= 0x80;
    bytes.push(digit);
  } while (value > 0);
  return Buffer.from(bytes);
};

/** The whole size of a packet read: its first byte, its remaining length's bytes and the rest. */
const packetSize = (packet: Packet) => 1 + varint(packet.length).length + packet.length;

/** The hash an SDK puts in a signed text. */
const hashOf = (text: string) => /"hash":"([0-9a-f]{64})"/.exec(text)?.[1];

const ackTopic = (clientId: string) => `Altizon/Datonis/${clientId}/httpAck`;
const deviceTopic = (clientId: string, kind: string) => `Altizon/Datonis/${clientId}/${kind}`;

function wireOf(
  version: Version,
  io: { write(bytes: Buffer): void; end(): void; closed: Promise<void> },
): Wire & {
  feed(chunk: Buffer): void;
} {
  const received: Packet[] = [];
  const chunks: Buffer[] = [];
  const parseErrors: Error[] = [];
  const listeners: ((packet: Packet) => void)[] = [];
  const parser = mqttPacket.parser();
  (parser as unknown as { settings: { protocolVersion: number } }).settings = { protocolVersion: version };
  parser.on('packet', (packet) => {
    received.push(packet as unknown as Packet);
    for (const listener of listeners) listener(packet as unknown as Packet);
  });
  parser.on('error', (error) => parseErrors.push(error));
  let closed = false;
  void io.closed.then(() => {
    closed = true;
  });
  return {
    version,
    received,
    parseErrors,
    closed: io.closed,
    isClosed: () => closed,
    bytes: () => Buffer.concat(chunks),
    feed(chunk) {
      chunks.push(chunk);
      parser.parse(chunk);
    },
    write: (bytes) => io.write(bytes),
    send: (packet) => io.write(mqttPacket.generate(packet, { protocolVersion: version })),
    onPacket: (listener) => listeners.push(listener),
    end: () => io.end(),
  };
}

interface ConnectOptions {
  clean?: boolean;
  keepalive?: number;
  username?: string;
  password?: string;
  properties?: Record<string, unknown>;
  /** The text of a will to the client's own event topic. */
  will?: string;
}

/** A signed CONNECT of `version`. */
const connectOf = (version: Version, clientId: string, pair: KeyPair, options: ConnectOptions = {}) =>
  mqttPacket.generate(
    {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: version,
      clean: options.clean ?? true,
      keepalive: options.keepalive ?? 60,
      clientId,
      username: options.username ?? pair.access_key,
      password: Buffer.from(options.password ?? sign(pair.secret_key, pair.access_key)),
      ...(options.will === undefined
        ? {}
        : {
            will: {
              topic: deviceTopic(clientId, 'event'),
              payload: Buffer.from(options.will),
              qos: 1,
              retain: false,
            },
          }),
      ...(options.properties === undefined ? {} : { properties: options.properties }),
    },
    { protocolVersion: version },
  );

const publishOf = (
  topic: string,
  payload: string | Buffer,
  qos: 0 | 1 | 2 = 0,
  messageId?: number,
  properties?: Record<string, unknown>,
  dup = false,
) => ({
  cmd: 'publish',
  topic,
  payload: Buffer.from(payload),
  qos,
  ...(qos > 0 ? { messageId } : {}),
  retain: false,
  dup,
  ...(properties ? { properties } : {}),
});

/** `count` signed events of `clientId`'s thing `thingKey` as MQTT 5 QoS 1 PUBLISHes, ids 1 up, in one buffer. */
const signedEventBurst = (pair: KeyPair, clientId: string, thingKey: string, count: number) =>
  Buffer.concat(
    Array.from({ length: count }, (_, i) =>
      mqttPacket.generate(
        publishOf(deviceTopic(clientId, 'event'), signedEnvelope(pair, { thing_key: thingKey, data: { i } }), 1, i + 1),
        { protocolVersion: 5 },
      ),
    ),
  );

async function waitFor(wire: Wire, match: (packet: Packet) => boolean, what: string, ms = 10_000): Promise<Packet> {
  await eventually(() => wire.received.some(match), what, ms);
  return wire.received.find(match) as Packet;
}

const closedWithin = (wire: Wire, ms: number) =>
  Promise.race([wire.closed.then(() => true), sleep(ms).then(() => wire.isClosed())]);

/** Signs `wire` in; fails unless its CONNACK accepts. */
async function signIn(wire: Wire, clientId: string, pair: KeyPair, options: ConnectOptions = {}): Promise<Packet> {
  wire.write(connectOf(wire.version, clientId, pair, options));
  const connack = await waitFor(wire, (p) => p.cmd === 'connack', 'the CONNACK');
  assert.equal(wire.version === 5 ? connack.reasonCode : connack.returnCode, 0, JSON.stringify(connack));
  return connack;
}

/** Subscribes and returns the SUBACK's codes. */
async function subscribe(
  wire: Wire,
  messageId: number,
  subscriptions: { topic: string; qos: 0 | 1 | 2 }[],
  properties?: Record<string, unknown>,
): Promise<number[]> {
  wire.send({ cmd: 'subscribe', messageId, subscriptions, ...(properties ? { properties } : {}) });
  const suback = await waitFor(wire, (p) => p.cmd === 'suback' && p.messageId === messageId, 'the SUBACK');
  return suback.granted ?? [];
}

/** The acknowledgements on `clientId`'s httpAck topic, read, in the order they came. */
const answersOf = (wire: Wire, clientId: string) =>
  wire.received
    .filter((p) => p.cmd === 'publish' && p.topic === ackTopic(clientId))
    .map((p) => JSON.parse(String(p.payload)) as { context: string; http_code: number; http_msg: object });

const reasonOf = (packet: Packet | undefined) => (packet ? (packet.reasonCode ?? 0) : undefined);

/**
 * Acknowledges, `delay` ms late, every QoS 1 and 2 PUBLISH `wire` receives (PUBACK; PUBREC, then PUBCOMP
 * for its PUBREL), and counts how many were in flight at once at most (MQTT 5 §4.9).
 */
function lateAcknowledger(wire: Wire, delay: number) {
  const inFlight = new Set<number>();
  let most = 0;
  const idsReused: number[] = [];
  wire.onPacket((packet) => {
    const id = packet.messageId as number;
    if (packet.cmd === 'publish' && (packet.qos ?? 0) > 0) {
      if (inFlight.has(id) && !packet.dup) idsReused.push(id);
      inFlight.add(id);
      most = Math.max(most, inFlight.size);
      setTimeout(() => {
        if (wire.isClosed()) return;
        if (packet.qos === 1) {
          inFlight.delete(id);
          wire.send({ cmd: 'puback', messageId: id });
        } else {
          wire.send({ cmd: 'pubrec', messageId: id });
        }
      }, delay);
    } else if (packet.cmd === 'pubrel') {
      setTimeout(() => {
        if (wire.isClosed()) return;
        inFlight.delete(id);
        wire.send({ cmd: 'pubcomp', messageId: id });
      }, delay);
    }
  });
  return { most: () => most, idsReused };
}

describeOnStores(
  'the device endpoint against MQTT 5 and MQTT over WebSocket',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;
    const webSocketUrl = () => `${ctx.api.url.replace(/^http/, 'ws')}/mqtt`;
    const keyPair = async () => createKeyPair(ctx.api, await ctx.api.adminToken());
    const stored = (thingKey: string) => storedEventCount(ctx.api, thingKey);

    /** Every connection a test opens, ended after it (those it must end sooner, it ends itself). */
    const opened = new Set<Wire>();
    afterEach(() => {
      for (const wire of opened) wire.end();
      opened.clear();
    });

    /** A raw TCP connection to the endpoint. */
    const tcp = async (version: Version): Promise<Wire> => {
      const socket = connect(ctx.api.server.mqttPort as number, '127.0.0.1');
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const wire = wireOf(version, { write: (bytes) => socket.write(bytes), end: () => socket.destroy(), closed });
      opened.add(wire);
      socket.on('data', (chunk: Buffer) => wire.feed(chunk));
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('error', reject);
      });
      return wire;
    };

    /** A WebSocket to /mqtt offering `mqtt`; each write is one WebSocket message. */
    const webSocket = async (version: Version): Promise<Wire & { messages: () => number }> => {
      const ws = new WebSocket(webSocketUrl(), ['mqtt']);
      ws.on('error', () => {});
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      let messages = 0;
      const wire = wireOf(version, { write: (bytes) => ws.send(bytes), end: () => ws.terminate(), closed });
      opened.add(wire);
      ws.on('message', (data: Buffer) => {
        messages += 1;
        wire.feed(data);
      });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      assert.equal(ws.protocol, 'mqtt');
      return Object.assign(wire, { messages: () => messages });
    };

    /** A thing registered by a device of `pair`. */
    const registeredThing = async (pair: KeyPair, options: { biDirectional?: boolean } = {}) => {
      const key = unique('c5');
      const registrar = await MqttDevice.connect(brokerUrl(), pair);
      try {
        const answer = await registrar.send('register', {
          thing_key: key,
          ...(options.biDirectional ? { bi_directional: true } : {}),
        });
        assert.equal(answer.http_code, 200, JSON.stringify(answer));
      } finally {
        await registrar.close();
      }
      return key;
    };

    /** A bi-directional thing of `pair`, its instruction topic, and how to send it instructions and read them. */
    const instructedThing = async (pair: KeyPair) => {
      const token = await ctx.api.adminToken();
      const thingKey = await registeredThing(pair, { biDirectional: true });
      return {
        thingKey,
        topic: `Altizon/Datonis/${pair.access_key}/thing/${thingKey}/executeInstruction`,
        send: async () => {
          const sent = await ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
            token,
            body: { instruction: { name: 'Open', definition: { command: 'open' } } },
          });
          assert.equal(sent.status, 200, sent.text);
          return sent.body.instruction as { instruction_key: string; alert_key: string };
        },
        status: async (instructionKey: string) => {
          const one = await ctx.api.request('GET', `/api/v3/things/${thingKey}/instructions/${instructionKey}`, {
            token,
          });
          assert.equal(one.status, 200, one.text);
          return one.body.instruction.status as string;
        },
      };
    };

    // CONNACK

    it('when an MQTT 5 device signs in then its CONNACK says Receive Maximum, a Maximum Packet Size of 10 MiB and 64 KiB, a Topic Alias Maximum of 16, and nothing it did not ask for', async () => {
      const wire = await tcp(5);
      const connack = await signIn(wire, unique('ca'), await keyPair());
      assert.equal(connack.sessionPresent, false, 'a clean start has no session [MQTT-3.2.2-2]');
      const properties = connack.properties ?? {};
      assert.ok(
        Number.isInteger(properties.receiveMaximum) &&
          properties.receiveMaximum >= 1 &&
          properties.receiveMaximum <= 1000,
        `Receive Maximum: MQTT_MAX_PENDING's share, 1 to 1,000 (got ${properties.receiveMaximum})`,
      );
      assert.equal(properties.maximumPacketSize, MAX_PACKET);
      assert.equal(properties.topicAliasMaximum, 16);
      assert.equal(properties.maximumQoS, undefined, 'QoS 2 is served: no Maximum QoS below it');
      assert.equal(properties.assignedClientIdentifier, undefined, 'the device named itself');
      assert.equal(
        properties.responseInformation,
        undefined,
        'no Response Information unless requested [MQTT-3.1.2-28]',
      );
    });

    it('when an MQTT 5 device signs in then its CONNACK says retained messages, subscription identifiers and shared subscriptions are not available (what the endpoint refuses), and wildcards are', async () => {
      const wire = await tcp(5);
      const properties = (await signIn(wire, unique('na'), await keyPair())).properties ?? {};
      assert.equal(properties.retainAvailable, false, 'a retained PUBLISH is refused with 0x9A (docs/devices.md)');
      assert.equal(properties.subscriptionIdentifiersAvailable, false);
      assert.notEqual(
        properties.wildcardSubscriptionAvailable,
        false,
        'a device subscribes to .../thing/+/executeInstruction',
      );
      assert.equal(
        properties.sharedSubscriptionAvailable,
        false,
        'a $share subscription is refused with 0x9E; absent means available (MQTT 5 §3.2.2.3.15)',
      );
    });

    it('when an MQTT 5 device asks for a session longer than MQTT_SESSION_EXPIRY then its CONNACK says the expiry it gets; one within it is kept as asked', async () => {
      const pair = await keyPair();
      const long = await tcp(5);
      const short = await tcp(5);
      try {
        const capped = await signIn(long, unique('exp'), pair, {
          clean: false,
          properties: { sessionExpiryInterval: 0xffffffff },
        });
        assert.equal(capped.properties?.sessionExpiryInterval, SESSION_EXPIRY, 'MQTT 5 §3.2.2.3.2');
        const kept = await signIn(short, unique('exp'), pair, {
          clean: false,
          properties: { sessionExpiryInterval: 60 },
        });
        assert.ok(
          kept.properties?.sessionExpiryInterval === undefined || kept.properties.sessionExpiryInterval === 60,
          JSON.stringify(kept.properties),
        );
      } finally {
        long.end();
        short.end();
      }
    });

    it('when an MQTT 5 login is wrong then the CONNACK is 0x86 with a Reason String, no session, and the connection closes without reading what was sent after the CONNECT', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      for (const [what, options] of [
        ['a wrong password', { password: sign(pair.secret_key, 'not the access key') }],
        ['an unknown access key', { username: 'a'.repeat(40) }],
      ] as const) {
        const clientId = unique('bad');
        const wire = await tcp(5);
        // The CONNECT, then a signed event and a SUBSCRIBE in the same write.
        wire.write(
          Buffer.concat([
            connectOf(5, clientId, pair, options),
            mqttPacket.generate(
              publishOf(deviceTopic(clientId, 'event'), signedEnvelope(pair, { thing_key: key, data: { v: 1 } }), 1, 1),
              { protocolVersion: 5 },
            ),
            mqttPacket.generate(
              { cmd: 'subscribe', messageId: 2, subscriptions: [{ topic: ackTopic(clientId), qos: 1 }] },
              { protocolVersion: 5 },
            ),
          ]),
        );
        assert.equal(await closedWithin(wire, 5000), true, `${what}: closed [MQTT-3.2.2-7]`);
        assert.deepEqual(
          wire.received.map((p) => p.cmd),
          ['connack'],
          `${what}: nothing but the CONNACK, no DISCONNECT [MQTT-3.14.0-1], no PUBACK or SUBACK [MQTT-3.1.4-5]`,
        );
        const [connack] = wire.received;
        assert.equal(connack?.reasonCode, 0x86, what);
        assert.equal(connack?.sessionPresent, false, `${what}: [MQTT-3.2.2-6]`);
        assert.equal(typeof connack?.properties?.reasonString, 'string', `${what}: a Reason String`);
        assert.ok(String(connack?.properties?.reasonString).length > 0);
      }
      await sleep(300);
      assert.equal(await stored(key), 0, 'the event sent after the refused CONNECT was not taken');
    });

    it('when an MQTT 5 device has a client id of 64 characters then it is served under it', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = `C${'0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-'.slice(0, 63)}`;
      assert.equal(clientId.length, 64);
      const wire = await tcp(5);
      const connack = await signIn(wire, clientId, pair);
      assert.equal(connack.properties?.assignedClientIdentifier, undefined);
      assert.deepEqual(await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 1 }]), [1]);
      const text = signedEnvelope(pair, { thing_key: key, data: { v: 64 } });
      wire.send(publishOf(deviceTopic(clientId, 'event'), text, 1, 2));
      await eventually(() => answersOf(wire, clientId).length === 1, 'the answer on its httpAck');
      assert.deepEqual(answersOf(wire, clientId)[0], { context: hashOf(text), http_code: 200, http_msg: {} });
      assert.equal(await stored(key), 1);
    });

    it('when an MQTT 5 device sends an empty client id then it is either given one in the CONNACK or refused with 0x85', async () => {
      const wire = await tcp(5);
      wire.write(connectOf(5, '', await keyPair()));
      const connack = await waitFor(wire, (p) => p.cmd === 'connack', 'the CONNACK');
      if (connack.reasonCode === 0) {
        const assigned = connack.properties?.assignedClientIdentifier;
        assert.equal(typeof assigned, 'string', 'an accepted empty client id is assigned one [MQTT-3.2.2-16]');
        assert.ok(String(assigned).length > 0);
      } else {
        assert.equal(connack.reasonCode, 0x85, 'a refused empty client id is 0x85 [MQTT-3.1.3-8]');
        assert.equal(await closedWithin(wire, 5000), true);
      }
    });

    // Receive Maximum and Maximum Packet Size

    it("when an MQTT 5 device alone on the server sends as many QoS 1 messages at once as the CONNACK's Receive Maximum then every one is taken", async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('rmin');
      const wire = await tcp(5);
      const receiveMaximum = Number((await signIn(wire, clientId, pair)).properties?.receiveMaximum);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      wire.write(signedEventBurst(pair, clientId, key, receiveMaximum));
      await eventually(() => answersOf(wire, clientId).length === receiveMaximum, 'every answer', 30_000);
      const codes = answersOf(wire, clientId).map((a) => a.http_code);
      assert.equal(codes.filter((code) => code === 200).length, receiveMaximum, JSON.stringify(codes));
      assert.equal(await stored(key), receiveMaximum);
    });

    it("when an MQTT 5 device sends three times the CONNACK's Receive Maximum of QoS 1 messages at once then it is not disconnected: each is PUBACKed with success in order and answered, what is answered 200 is stored, and it is served after", async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('rmx');
      const wire = await tcp(5);
      const receiveMaximum = Number((await signIn(wire, clientId, pair)).properties?.receiveMaximum);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      const count = receiveMaximum * 3;
      wire.write(signedEventBurst(pair, clientId, key, count));
      const pubacks = () => wire.received.filter((p) => p.cmd === 'puback');
      await eventually(
        () => pubacks().length === count && answersOf(wire, clientId).length === count,
        `${count} PUBACKs and answers`,
        60_000,
      );
      assert.equal(
        wire.received.find((p) => p.cmd === 'disconnect'),
        undefined,
        'no DISCONNECT 0x93',
      );
      assert.deepEqual(
        pubacks().map((p) => p.messageId),
        Array.from({ length: count }, (_, i) => i + 1),
        'PUBACKs in the order of the PUBLISHes [MQTT-4.6.0-2]',
      );
      assert.ok(pubacks().every((p) => reasonOf(p) === 0));
      // Past what the endpoint holds at once, a message is refused on its httpAck (docs/devices.md, "Overload").
      const codes = answersOf(wire, clientId).map((a) => a.http_code);
      assert.deepEqual(
        codes.filter((code) => code !== 200 && code !== 503),
        [],
      );
      const taken = codes.filter((code) => code === 200).length;
      assert.ok(taken >= 1, 'some are taken');
      assert.equal(await stored(key), taken, 'what was answered 200, and nothing else');
      assert.equal(await closedWithin(wire, 200), false, 'still connected');
      const later = signedEnvelope(pair, { thing_key: key, data: { later: 1 } });
      wire.send(publishOf(deviceTopic(clientId, 'event'), later, 1, count + 1));
      await eventually(() => answersOf(wire, clientId).length === count + 1, 'the answer of a message after');
      assert.deepEqual(answersOf(wire, clientId)[count], { context: hashOf(later), http_code: 200, http_msg: {} });
    });

    it('when an MQTT 5 device sets a Receive Maximum of 1 then QoS 2 instructions and QoS 1 answers leave one at a time: an instruction holds its place until its PUBCOMP', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const clientId = unique('rm1');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair, { properties: { receiveMaximum: 1 } });
      await subscribe(wire, 1, [
        { topic: thing.topic, qos: 2 },
        { topic: ackTopic(clientId), qos: 1 },
      ]);
      const acknowledger = lateAcknowledger(wire, 300);
      const first = await thing.send();
      const second = await thing.send();
      // Not JSON: each answered PARSE_ERROR at once.
      wire.send(publishOf(deviceTopic(clientId, 'heartbeat'), 'x'));
      wire.send(publishOf(deviceTopic(clientId, 'heartbeat'), 'x'));
      const publishes = () => wire.received.filter((p) => p.cmd === 'publish');
      await eventually(() => publishes().length === 4, 'two instructions and two answers', 20_000);
      await eventually(
        async () =>
          (await thing.status(first.instruction_key)) === 'delivered' &&
          (await thing.status(second.instruction_key)) === 'delivered',
        'both instructions delivered',
      );
      assert.equal(acknowledger.most(), 1, 'never more in flight than the Receive Maximum [MQTT-3.3.4-9]');
      assert.deepEqual(
        publishes()
          .filter((p) => p.topic === thing.topic)
          .map((p) => p.qos),
        [2, 2],
      );
      assert.ok(
        publishes().every((p) => (p.messageId ?? 0) > 0),
        'packet ids are not 0 [MQTT-2.2.1-3]',
      );
    });

    it('when an MQTT 5 device with a Receive Maximum of 1 refuses a QoS 2 instruction in its PUBREC then its flow ends there: no PUBREL, the place is free for the next answer, and the instruction stays pending', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const clientId = unique('rec');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair, { properties: { receiveMaximum: 1 } });
      await subscribe(wire, 1, [
        { topic: thing.topic, qos: 2 },
        { topic: ackTopic(clientId), qos: 1 },
      ]);
      const instruction = await thing.send();
      const sent = await waitFor(wire, (p) => p.topic === thing.topic, 'the instruction');
      wire.send({ cmd: 'pubrec', messageId: sent.messageId, reasonCode: 0x80 });
      wire.send(publishOf(deviceTopic(clientId, 'heartbeat'), 'x'));
      await eventually(() => answersOf(wire, clientId).length === 1, 'the answer, with no PUBCOMP sent');
      await sleep(300);
      assert.equal(
        wire.received.find((p) => p.cmd === 'pubrel'),
        undefined,
        'no PUBREL after a refusal (MQTT 5 §4.3.3)',
      );
      assert.equal(await thing.status(instruction.instruction_key), 'pending');
    });

    /**
     * The sizes of the answer to a message that is no JSON (PARSE_ERROR, 500, with errors) and of the answer to
     * a signed register (200 with its hash), as the client id `clientId` gets them.
     */
    const answerSizes = async (pair: KeyPair, clientId: string, key: string) => {
      const probe = await tcp(5);
      try {
        await signIn(probe, clientId, pair);
        await subscribe(probe, 1, [{ topic: ackTopic(clientId), qos: 1 }]);
        probe.send(publishOf(deviceTopic(clientId, 'heartbeat'), 'x'));
        probe.send(publishOf(deviceTopic(clientId, 'register'), signedEnvelope(pair, { thing_key: key })));
        await eventually(() => answersOf(probe, clientId).length === 2, 'two answers');
        const [unreadable, register] = probe.received.filter((p) => p.cmd === 'publish') as [Packet, Packet];
        assert.equal(JSON.parse(String(unreadable.payload)).http_code, 500);
        assert.equal(JSON.parse(String(register.payload)).http_code, 200);
        return { unreadable: packetSize(unreadable), register: packetSize(register) };
      } finally {
        probe.end();
        await probe.closed;
      }
    };

    it('when an answer is longer than the Maximum Packet Size an MQTT 5 device set then it is dropped as if sent: with a Receive Maximum of 1 the next answer still comes unacknowledged', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('mps');
      const sizes = await answerSizes(pair, clientId, key);
      assert.ok(sizes.unreadable > sizes.register, JSON.stringify(sizes));
      const wire = await tcp(5);
      // Exactly the size of a register's answer: it fits, a PARSE_ERROR's does not.
      await signIn(wire, clientId, pair, {
        properties: { receiveMaximum: 1, maximumPacketSize: sizes.register },
      });
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 1 }]);
      for (let i = 0; i < 3; i++) wire.send(publishOf(deviceTopic(clientId, 'heartbeat'), 'x'));
      const text = signedEnvelope(pair, { thing_key: key });
      wire.send(publishOf(deviceTopic(clientId, 'register'), text));
      // None is acknowledged: had the dropped answers taken the one place in flight, none would come.
      await eventually(() => answersOf(wire, clientId).length >= 1, 'the answer that fits', 10_000);
      await sleep(300);
      assert.deepEqual(answersOf(wire, clientId), [{ context: hashOf(text), http_code: 200, http_msg: {} }]);
      for (const packet of wire.received) {
        assert.ok(packetSize(packet) <= sizes.register, `${packet.cmd} of ${packetSize(packet)} [MQTT-3.1.2-24]`);
      }
    });

    it('when an answer is one byte longer than the Maximum Packet Size an MQTT 5 device set (its fixed header counted) then it is not sent [MQTT-3.1.2-24]', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('mps1');
      const sizes = await answerSizes(pair, clientId, key);
      const wire = await tcp(5);
      await signIn(wire, clientId, pair, { properties: { maximumPacketSize: sizes.register - 1 } });
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 1 }]);
      wire.send(publishOf(deviceTopic(clientId, 'register'), signedEnvelope(pair, { thing_key: key }), 1, 2));
      // A register without a hash: answered 200 with the context PARSE_ERROR, a shorter answer, which fits.
      wire.send(publishOf(deviceTopic(clientId, 'register'), JSON.stringify({ thing_key: key }), 1, 3));
      await eventually(() => answersOf(wire, clientId).length >= 1, 'the answer that fits');
      await sleep(500);
      assert.deepEqual(
        answersOf(wire, clientId).map((a) => [a.context, a.http_code]),
        [['PARSE_ERROR', 200]],
        `no answer of ${sizes.register} bytes to a device taking ${sizes.register - 1}`,
      );
    });

    it('when an instruction is longer than the Maximum Packet Size an MQTT 5 device set then it is not sent, stays pending, blocks nothing, and goes to a device that takes it', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const clientId = unique('mpsi');
      const sizes = await answerSizes(pair, clientId, thing.thingKey);
      const small = await tcp(5);
      const large = await tcp(5);
      try {
        await signIn(small, clientId, pair, {
          properties: { receiveMaximum: 1, maximumPacketSize: sizes.register },
        });
        await subscribe(small, 1, [
          { topic: thing.topic, qos: 2 },
          { topic: ackTopic(clientId), qos: 1 },
        ]);
        const instruction = await thing.send();
        await sleep(500);
        assert.equal(small.received.filter((p) => p.topic === thing.topic).length, 0, 'too long: not sent');
        const text = signedEnvelope(pair, { thing_key: thing.thingKey });
        small.send(publishOf(deviceTopic(clientId, 'register'), text));
        await eventually(() => answersOf(small, clientId).length === 1, 'an answer after it, unblocked');
        assert.equal(answersOf(small, clientId)[0]?.context, hashOf(text));
        assert.equal(await thing.status(instruction.instruction_key), 'pending');

        await signIn(large, unique('mpsl'), pair);
        lateAcknowledger(large, 0);
        await subscribe(large, 1, [{ topic: thing.topic, qos: 2 }]);
        const got = await waitFor(large, (p) => p.topic === thing.topic, 'the instruction on a device that takes it');
        assert.ok(packetSize(got) > sizes.register, 'it was too long for the first');
        assert.equal(JSON.parse(String(got.payload)).alert_key, instruction.alert_key);
        await eventually(async () => (await thing.status(instruction.instruction_key)) === 'delivered', 'delivered');
      } finally {
        small.end();
        large.end();
      }
    });

    it('when an MQTT 5 PUBLISH is exactly the Maximum Packet Size then it is read and answered; one whose remaining length alone passes it gets DISCONNECT 0x95 before its bytes arrive', async () => {
      const pair = await keyPair();
      const clientId = unique('big');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      const topic = deviceTopic(clientId, 'event');
      // Remaining length: topic (2 + its bytes), packet id 2, properties length 1, payload; a 4-byte length.
      const payloadLength = MAX_PACKET - 1 - 4 - (2 + Buffer.byteLength(topic) + 2 + 1);
      const largest = mqttPacket.generate(publishOf(topic, Buffer.alloc(payloadLength, 0x78), 1, 7), {
        protocolVersion: 5,
      });
      assert.equal(largest.length, MAX_PACKET);
      wire.write(largest);
      const puback = await waitFor(wire, (p) => p.cmd === 'puback' && p.messageId === 7, 'its PUBACK', 60_000);
      assert.ok((reasonOf(puback) ?? 0) < 0x80, JSON.stringify(puback));
      await eventually(() => answersOf(wire, clientId).length === 1, 'its answer', 60_000);
      assert.equal(wire.isClosed(), false);

      wire.write(Buffer.concat([Buffer.from([0x32]), varint(MAX_PACKET + 1), Buffer.alloc(1000)]));
      assert.equal(await closedWithin(wire, 5000), true, 'closed without the rest');
      assert.equal(
        reasonOf(wire.received.find((p) => p.cmd === 'disconnect')),
        0x95,
        'packet too large (MQTT 5 §3.2.2.3.6)',
      );
    });

    it('when an MQTT 5 PUBLISH is one byte longer than the Maximum Packet Size (its fixed header counted) then it gets DISCONNECT 0x95 before its bytes arrive', async () => {
      const wire = await tcp(5);
      await signIn(wire, unique('big'), await keyPair());
      // A first byte, a 4-byte remaining length, and that length: one byte over.
      wire.write(Buffer.concat([Buffer.from([0x32]), varint(MAX_PACKET - 4), Buffer.alloc(1000)]));
      assert.equal(await closedWithin(wire, 5000), true, 'closed without the rest');
      assert.equal(reasonOf(wire.received.find((p) => p.cmd === 'disconnect')), 0x95);
    });

    // Topic aliases

    it('when an MQTT 5 device sets a topic alias and then publishes with an empty topic and the alias then the message goes to that topic; an alias set again names its new topic; 16 is taken', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('alias');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      const event = (i: number) => signedEnvelope(pair, { thing_key: key, data: { i } });
      const events = deviceTopic(clientId, 'event');
      const sent = [
        publishOf(events, event(1), 1, 1, { topicAlias: 1 }),
        publishOf('', event(2), 1, 2, { topicAlias: 1 }),
        publishOf(events, event(3), 1, 3, { topicAlias: 16 }),
        publishOf('', event(4), 1, 4, { topicAlias: 16 }),
        // Alias 1 now names the register topic: a register is no event (one without data is refused).
        publishOf(deviceTopic(clientId, 'register'), signedEnvelope(pair, { thing_key: key }), 1, 5, {
          topicAlias: 1,
        }),
        publishOf('', signedEnvelope(pair, { thing_key: key }), 1, 6, { topicAlias: 1 }),
      ];
      for (const packet of sent) wire.send(packet);
      await eventually(() => answersOf(wire, clientId).length === 6, 'six answers');
      assert.deepEqual(
        answersOf(wire, clientId).map((a) => a.http_code),
        [200, 200, 200, 200, 200, 200],
        JSON.stringify(answersOf(wire, clientId)),
      );
      assert.deepEqual(
        wire.received.filter((p) => p.cmd === 'puback').map((p) => [p.messageId, reasonOf(p)]),
        [1, 2, 3, 4, 5, 6].map((id) => [id, 0]),
      );
      assert.equal(await stored(key), 4);
    });

    it('when an MQTT 5 device publishes with topic alias 0 or one above the Topic Alias Maximum then it gets DISCONNECT 0x94 and nothing is taken', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      for (const topicAlias of [0, 17]) {
        const clientId = unique('alias');
        const wire = await tcp(5);
        await signIn(wire, clientId, pair);
        wire.send(
          publishOf(deviceTopic(clientId, 'event'), signedEnvelope(pair, { thing_key: key, data: { v: 1 } }), 1, 1, {
            topicAlias,
          }),
        );
        assert.equal(await closedWithin(wire, 5000), true, `alias ${topicAlias}: closed`);
        assert.equal(
          reasonOf(wire.received.find((p) => p.cmd === 'disconnect')),
          0x94,
          `alias ${topicAlias}: topic alias invalid [MQTT-3.3.2-8], [MQTT-3.3.2-9]`,
        );
        assert.equal(
          wire.received.find((p) => p.cmd === 'puback'),
          undefined,
        );
      }
      await sleep(200);
      assert.equal(await stored(key), 0);
    });

    it('when an MQTT 5 device publishes with an empty topic and an alias it never set then it gets DISCONNECT 0x82, a protocol error, and nothing is taken', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('alias');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      wire.send(publishOf('', signedEnvelope(pair, { thing_key: key, data: { v: 1 } }), 1, 1, { topicAlias: 3 }));
      assert.equal(await closedWithin(wire, 5000), true, 'closed');
      assert.equal(
        wire.received.find((p) => p.cmd === 'puback'),
        undefined,
      );
      assert.equal(await stored(key), 0);
      assert.equal(reasonOf(wire.received.find((p) => p.cmd === 'disconnect')), 0x82);
    });

    it('when an MQTT 5 device resumes its session on a new connection then the topic aliases of the old one are gone [MQTT-3.3.2-7]', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('alias');
      const first = await tcp(5);
      const event = (i: number) => signedEnvelope(pair, { thing_key: key, data: { i } });
      try {
        await signIn(first, clientId, pair, { clean: false, properties: { sessionExpiryInterval: 60 } });
        first.send(publishOf(deviceTopic(clientId, 'event'), event(1), 1, 1, { topicAlias: 2 }));
        await waitFor(first, (p) => p.cmd === 'puback', 'the PUBACK');
        first.send({ cmd: 'disconnect', reasonCode: 0 });
        await first.closed;
      } finally {
        first.end();
      }
      const again = await tcp(5);
      const connack = await signIn(again, clientId, pair, {
        clean: false,
        properties: { sessionExpiryInterval: 60 },
      });
      assert.equal(connack.sessionPresent, true);
      again.send(publishOf('', event(2), 1, 2, { topicAlias: 2 }));
      assert.equal(await closedWithin(again, 5000), true, 'closed: the alias has no mapping here');
      const reason = reasonOf(again.received.find((p) => p.cmd === 'disconnect'));
      assert.ok(reason !== undefined && reason >= 0x80, `told why (got ${reason})`);
      assert.equal(
        again.received.find((p) => p.cmd === 'puback'),
        undefined,
      );
      // The first is stored once its transaction commits, which the PUBACK does not wait for.
      await eventually(async () => (await stored(key)) === 1, 'the first stored');
      assert.equal(await stored(key), 1, 'only the first');
    });

    it('when an MQTT 5 device sets no Topic Alias Maximum then its answers carry their topic and no alias; with a maximum of 1 every alias is 1 and names its httpAck', async () => {
      const pair = await keyPair();
      for (const topicAliasMaximum of [undefined, 1]) {
        const clientId = unique('srvalias');
        const wire = await tcp(5);
        await signIn(wire, clientId, pair, {
          ...(topicAliasMaximum === undefined ? {} : { properties: { topicAliasMaximum } }),
        });
        await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
        for (let i = 0; i < 4; i++) wire.send(publishOf(deviceTopic(clientId, 'heartbeat'), 'x'));
        const publishes = () => wire.received.filter((p) => p.cmd === 'publish');
        await eventually(() => publishes().length === 4, 'four answers');
        const aliases = new Map<number, string>();
        for (const packet of publishes()) {
          const alias = packet.properties?.topicAlias as number | undefined;
          if (topicAliasMaximum === undefined) {
            assert.equal(alias, undefined, 'no alias to a client that set no maximum [MQTT-3.1.2-27]');
            assert.equal(packet.topic, ackTopic(clientId));
            continue;
          }
          if (alias !== undefined) {
            assert.ok(alias >= 1 && alias <= topicAliasMaximum, `alias ${alias} [MQTT-3.1.2-26]`);
            if (packet.topic) aliases.set(alias, packet.topic);
          }
          const topic = packet.topic || (alias === undefined ? undefined : aliases.get(alias));
          assert.equal(topic, ackTopic(clientId), 'an empty topic only with an alias already set');
        }
      }
    });

    // Sessions

    it('when an MQTT 5 session expires with an instruction waiting in it then the device finds no session, and the instruction, still pending, comes when it subscribes again', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      /** Signs in without a clean start, subscribes to the instructions, and leaves with DISCONNECT setting `expiry`. */
      const leave = async (clientId: string, expiry: number) => {
        const wire = await tcp(5);
        try {
          await signIn(wire, clientId, pair, { clean: false, properties: { sessionExpiryInterval: 600 } });
          await subscribe(wire, 1, [{ topic: thing.topic, qos: 2 }]);
          // Shortening the expiry at DISCONNECT is allowed; only raising it from 0 is not (MQTT 5 §3.14.2.2.2).
          wire.send({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: expiry } });
          assert.equal(await closedWithin(wire, 5000), true);
          assert.equal(
            wire.received.find((p) => p.cmd === 'disconnect'),
            undefined,
            'a normal DISCONNECT',
          );
        } finally {
          wire.end();
        }
      };
      const kept = unique('kept');
      const brief = unique('brief');
      await leave(kept, 600);
      await leave(brief, 1);
      const instruction = await thing.send();
      await sleep(2000);

      const back = await tcp(5);
      const expired = await tcp(5);
      try {
        // The kept session: present, and the instruction comes without a subscription.
        lateAcknowledger(back, 0);
        assert.equal((await signIn(back, kept, pair, { clean: false })).sessionPresent, true);
        const resumed = await waitFor(back, (p) => p.topic === thing.topic, 'the instruction in the kept session');
        assert.equal(JSON.parse(String(resumed.payload)).alert_key, instruction.alert_key);

        // The expired one: no session, nothing without a subscription.
        assert.equal((await signIn(expired, brief, pair, { clean: false })).sessionPresent, false, 'expired');
        await sleep(500);
        assert.equal(expired.received.filter((p) => p.cmd === 'publish').length, 0, 'no subscription: nothing');
        lateAcknowledger(expired, 0);
        await subscribe(expired, 1, [{ topic: thing.topic, qos: 2 }]);
        const again = await waitFor(expired, (p) => p.topic === thing.topic, 'the instruction once subscribed');
        assert.equal(JSON.parse(String(again.payload)).alert_key, instruction.alert_key);
        assert.equal(again.qos, 2);
      } finally {
        back.end();
        expired.end();
      }
    });

    // What a device may publish and subscribe to

    it('when an MQTT 5 device subscribes to its own topics and others in one SUBSCRIBE then its SUBACK has one code each, in order: 0x87 for every foreign one', async () => {
      const pair = await keyPair();
      const other = await keyPair();
      const clientId = unique('sub');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      const granted = await subscribe(wire, 1, [
        { topic: ackTopic(clientId), qos: 1 },
        { topic: ackTopic(unique('other')), qos: 1 },
        { topic: `Altizon/Datonis/${other.access_key}/thing/+/executeInstruction`, qos: 2 },
        { topic: `Altizon/Datonis/${pair.access_key}/thing/+/executeInstruction`, qos: 2 },
        { topic: '#', qos: 0 },
        { topic: 'Altizon/Datonis/+/httpAck', qos: 1 },
      ]);
      assert.equal(granted.length, 6, 'a code for each filter [MQTT-3.9.3-1]');
      assert.ok(granted[0] === 0 || granted[0] === 1, `its httpAck: granted (got ${granted[0]})`);
      assert.equal(granted[3], 2, 'its instructions at QoS 2');
      assert.deepEqual([granted[1], granted[2], granted[4], granted[5]], [0x87, 0x87, 0x87, 0x87]);
    });

    it('when an MQTT 5 device publishes outside its topics then PUBACK says 0x87: under another client id with no httpAck, elsewhere with a 404 on its own', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('pub');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      const foreign = signedEnvelope(pair, { thing_key: key, data: { v: 1 } });
      const misspelt = signedEnvelope(pair, { thing_key: key, data: { v: 2 } });
      const good = signedEnvelope(pair, { thing_key: key, data: { v: 3 } });
      wire.send(publishOf(deviceTopic(unique('other'), 'event'), foreign, 1, 1));
      wire.send(publishOf(deviceTopic(clientId, 'evnt'), misspelt, 1, 2));
      wire.send(publishOf(deviceTopic(clientId, 'event'), good, 1, 3));
      await eventually(() => answersOf(wire, clientId).length === 2, 'two answers');
      await sleep(300);
      assert.deepEqual(
        wire.received.filter((p) => p.cmd === 'puback').map((p) => [p.messageId, reasonOf(p)]),
        [
          [1, 0x87],
          [2, 0x87],
          [3, 0],
        ],
      );
      assert.deepEqual(
        answersOf(wire, clientId).map((a) => [a.context, a.http_code]),
        [
          [hashOf(misspelt), 404],
          [hashOf(good), 200],
        ],
        'none for the foreign client id',
      );
      assert.equal(await stored(key), 1);
    });

    it('when an MQTT 5 device sets Request Problem Information to 0 then its PUBACK and SUBACK refusals carry no Reason String or User Properties [MQTT-3.1.2-29]', async () => {
      const pair = await keyPair();
      const clientId = unique('rpi');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair, { properties: { requestProblemInformation: false } });
      assert.deepEqual(await subscribe(wire, 1, [{ topic: ackTopic(unique('other')), qos: 1 }]), [0x87]);
      wire.send(publishOf(deviceTopic(unique('other'), 'event'), '{}', 1, 2));
      wire.send(publishOf(deviceTopic(clientId, 'nothing'), '{}', 2, 3));
      const puback = await waitFor(wire, (p) => p.cmd === 'puback', 'the PUBACK');
      const pubrec = await waitFor(wire, (p) => p.cmd === 'pubrec', 'the PUBREC');
      assert.equal(reasonOf(puback), 0x87);
      assert.equal(reasonOf(pubrec), 0x87);
      for (const packet of wire.received.filter((p) => ['suback', 'puback', 'pubrec'].includes(p.cmd))) {
        assert.equal(packet.properties?.reasonString, undefined, `${packet.cmd}: no Reason String`);
        assert.equal(packet.properties?.userProperties, undefined, `${packet.cmd}: no User Properties`);
      }
    });

    it('when an MQTT 5 device sends User Properties and other properties on CONNECT, SUBSCRIBE and PUBLISH then they are accepted and the message is stored', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('props');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair, {
        properties: { userProperties: { site: 'plant-7', line: ['a', 'b'] }, requestResponseInformation: false },
      });
      assert.deepEqual(
        await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 1 }], { userProperties: { why: 'acks' } }),
        [1],
      );
      const text = signedEnvelope(pair, { thing_key: key, data: { v: 1 } });
      wire.send(
        publishOf(deviceTopic(clientId, 'event'), text, 1, 2, {
          userProperties: { 'x-trace': 'abc', repeated: ['1', '2'] },
          payloadFormatIndicator: true,
          contentType: 'application/json',
          messageExpiryInterval: 60,
          correlationData: Buffer.from('c1'),
        }),
      );
      const puback = await waitFor(wire, (p) => p.cmd === 'puback', 'the PUBACK');
      assert.equal(reasonOf(puback), 0);
      await eventually(() => answersOf(wire, clientId).length === 1, 'the answer');
      assert.deepEqual(answersOf(wire, clientId)[0], { context: hashOf(text), http_code: 200, http_msg: {} });
      assert.equal(await stored(key), 1);
    });

    // QoS 2 and unreadable messages

    it('when an MQTT 5 device publishes at QoS 2 then PUBREC, PUBREL and PUBCOMP carry its packet id; a duplicate before PUBREL is stored once, and the id reused after PUBCOMP is a new message', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('qos2');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      const text = signedEnvelope(pair, { thing_key: key, data: { v: 1 } });
      const topic = deviceTopic(clientId, 'event');
      const pubrecs = () => wire.received.filter((p) => p.cmd === 'pubrec');
      wire.send(publishOf(topic, text, 2, 5));
      await eventually(() => pubrecs().length === 1, 'the PUBREC');
      wire.send(publishOf(topic, text, 2, 5, undefined, true));
      await eventually(() => pubrecs().length === 2, 'a PUBREC to the duplicate [MQTT-4.3.3-10]');
      assert.deepEqual(
        pubrecs().map((p) => [p.messageId, reasonOf(p)]),
        [
          [5, 0],
          [5, 0],
        ],
      );
      wire.send({ cmd: 'pubrel', messageId: 5 });
      const pubcomp = await waitFor(wire, (p) => p.cmd === 'pubcomp', 'the PUBCOMP');
      assert.deepEqual([pubcomp.messageId, reasonOf(pubcomp)], [5, 0]);
      await eventually(() => answersOf(wire, clientId).length >= 1, 'the answer');
      await sleep(300);
      assert.deepEqual(answersOf(wire, clientId), [{ context: hashOf(text), http_code: 200, http_msg: {} }]);
      assert.equal(await stored(key), 1, 'exactly once');

      const next = signedEnvelope(pair, { thing_key: key, data: { v: 2 } });
      wire.send(publishOf(topic, next, 2, 5));
      await eventually(() => pubrecs().length === 3, 'a PUBREC to the new message [MQTT-4.3.3-9]');
      wire.send({ cmd: 'pubrel', messageId: 5 });
      await eventually(() => answersOf(wire, clientId).length === 2, 'its answer');
      assert.equal(answersOf(wire, clientId)[1]?.context, hashOf(next));
      assert.equal(await stored(key), 2);
    });

    it('when an MQTT 5 device sends PUBREL for a packet id it never used then the PUBCOMP carries that id, with 0x92 (packet identifier not found)', async () => {
      const pair = await keyPair();
      const wire = await tcp(5);
      await signIn(wire, unique('rel'), pair);
      wire.send({ cmd: 'pubrel', messageId: 4242 });
      const pubcomp = await waitFor(wire, (p) => p.cmd === 'pubcomp', 'a PUBCOMP [MQTT-4.3.3-11]');
      assert.equal(pubcomp.messageId, 4242);
      assert.equal(reasonOf(pubcomp), 0x92, 'MQTT 5 §3.7.2.1');
      assert.equal(await closedWithin(wire, 200), false);
    });

    it('when an MQTT 5 device publishes what cannot be read at QoS 1 or 2 then it is acknowledged with success and answered PARSE_ERROR 500', async () => {
      const pair = await keyPair();
      const clientId = unique('junk');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      wire.send(publishOf(deviceTopic(clientId, 'event'), Buffer.from([0xff, 0xfe, 0x00, 0x7b]), 1, 1));
      wire.send(publishOf(deviceTopic(clientId, 'register'), '{"thing_key": ', 2, 2));
      const pubrec = await waitFor(wire, (p) => p.cmd === 'pubrec', 'the PUBREC');
      assert.deepEqual([pubrec.messageId, reasonOf(pubrec)], [2, 0]);
      wire.send({ cmd: 'pubrel', messageId: 2 });
      await waitFor(wire, (p) => p.cmd === 'pubcomp', 'the PUBCOMP');
      const puback = await waitFor(wire, (p) => p.cmd === 'puback', 'the PUBACK');
      assert.deepEqual([puback.messageId, reasonOf(puback)], [1, 0]);
      await eventually(() => answersOf(wire, clientId).length === 2, 'two answers');
      for (const answer of answersOf(wire, clientId)) {
        assert.equal(answer.context, 'PARSE_ERROR');
        assert.equal(answer.http_code, 500);
      }
    });

    // Instructions

    it('when an MQTT 5 device subscribes to its instructions at QoS 0 or 1 then they come at that QoS, not above [MQTT-3.8.4-8]', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      for (const qos of [0, 1] as const) {
        const wire = await tcp(5);
        try {
          await signIn(wire, unique('q'), pair);
          lateAcknowledger(wire, 0);
          assert.deepEqual(await subscribe(wire, 1, [{ topic: thing.topic, qos }]), [qos]);
          const instruction = await thing.send();
          const got = await waitFor(
            wire,
            (p) => p.topic === thing.topic && JSON.parse(String(p.payload)).alert_key === instruction.alert_key,
            'the instruction',
          );
          assert.equal(got.qos, qos);
        } finally {
          wire.end();
          await wire.closed;
        }
      }
    });

    // DISCONNECT and protocol errors

    it('when an MQTT 5 device sends DISCONNECT 0x00 then the server closes without a DISCONNECT of its own and takes no will', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('bye');
      const wire = await tcp(5);
      await signIn(wire, clientId, pair, { will: signedEnvelope(pair, { thing_key: key, data: { gone: 1 } }) });
      wire.send({ cmd: 'disconnect', reasonCode: 0 });
      assert.equal(await closedWithin(wire, 5000), true, 'closed');
      assert.deepEqual(
        wire.received.map((p) => p.cmd),
        ['connack'],
        'nothing after a DISCONNECT [MQTT-3.14.4-1]',
      );
      await sleep(500);
      assert.equal(await stored(key), 0, 'the will is discarded [MQTT-3.14.4-3]');
    });

    it('when an MQTT 5 device sends DISCONNECT with an error reason (0x80) then its will is taken, as for any reason but 0x00', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const wire = await tcp(5);
      await signIn(wire, unique('err'), pair, { will: signedEnvelope(pair, { thing_key: key, data: { gone: 1 } }) });
      wire.send({ cmd: 'disconnect', reasonCode: 0x80 });
      assert.equal(await closedWithin(wire, 5000), true, 'closed');
      await eventually(async () => (await stored(key)) === 1, 'the will', 5000);
    });

    it('when an MQTT 5 device sends AUTH without having named an authentication method, or an empty SUBSCRIBE, then it gets DISCONNECT 0x82', async () => {
      const pair = await keyPair();
      const cases: [string, Buffer][] = [
        [
          'AUTH',
          mqttPacket.generate(
            { cmd: 'auth', reasonCode: 0x18, properties: { authenticationMethod: 'SCRAM-SHA-1' } },
            { protocolVersion: 5 },
          ),
        ],
        // SUBSCRIBE, packet id 1, no properties, no topic filter [MQTT-3.8.3-2].
        ['an empty SUBSCRIBE', Buffer.from([0x82, 0x03, 0x00, 0x01, 0x00])],
      ];
      for (const [what, bytes] of cases) {
        const wire = await tcp(5);
        await signIn(wire, unique('perr'), pair);
        wire.write(bytes);
        assert.equal(await closedWithin(wire, 5000), true, `${what}: closed`);
        assert.equal(reasonOf(wire.received.find((p) => p.cmd === 'disconnect')), 0x82, what);
      }
    });

    // MQTT 3.1.1 beside MQTT 5

    it('when a 3.1.1 device is refused or sends a second CONNECT then it gets only 3.1.1 packets: a 4-byte CONNACK 5, SUBACK 0x80, and no DISCONNECT', async () => {
      const pair = await keyPair();
      const refused = await tcp(4);
      try {
        refused.write(connectOf(4, unique('v4'), pair, { password: 'wrong' }));
        assert.equal(await closedWithin(refused, 5000), true);
        assert.deepEqual([...refused.bytes()], [0x20, 0x02, 0x00, 0x05], 'CONNACK, remaining length 2, code 5');
      } finally {
        refused.end();
      }
      const clientId = unique('v4');
      const wire = await tcp(4);
      await signIn(wire, clientId, pair);
      const granted = await subscribe(wire, 1, [
        { topic: ackTopic(unique('other')), qos: 1 },
        { topic: ackTopic(clientId), qos: 1 },
      ]);
      assert.deepEqual(granted, [0x80, 1], 'MQTT 3.1.1 has 0x80 for a refusal (§3.9.3), not 0x87');
      wire.send(publishOf(deviceTopic(unique('other'), 'event'), '{}', 1, 2));
      const puback = await waitFor(wire, (p) => p.cmd === 'puback', 'the PUBACK');
      assert.equal(puback.length, 2, 'a 3.1.1 PUBACK has no reason code');
      const before = wire.bytes().length;
      wire.write(connectOf(4, clientId, pair));
      assert.equal(await closedWithin(wire, 5000), true, 'a second CONNECT closes');
      assert.equal(wire.bytes().length, before, 'nothing sent: MQTT 3.1.1 has no DISCONNECT from the server');
    });

    it('when a 3.1.1 device sends a PUBLISH with MQTT 5 properties then it is read as 3.1.1: a 3.1.1 PUBACK, and its payload (properties first) answered PARSE_ERROR and not stored', async () => {
      const pair = await keyPair();
      const key = await registeredThing(pair);
      const clientId = unique('v4p');
      const wire = await tcp(4);
      await signIn(wire, clientId, pair);
      await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 0 }]);
      const text = signedEnvelope(pair, { thing_key: key, data: { v: 1 } });
      const before = wire.bytes().length;
      wire.write(
        mqttPacket.generate(
          publishOf(deviceTopic(clientId, 'event'), text, 1, 9, { userProperties: { a: 'b' }, contentType: 'json' }),
          { protocolVersion: 5 },
        ),
      );
      await eventually(() => answersOf(wire, clientId).length === 1, 'the answer');
      assert.deepEqual(
        [...wire.bytes().subarray(before, before + 4)],
        [0x40, 0x02, 0x00, 0x09],
        'a 3.1.1 PUBACK of packet id 9 first',
      );
      assert.deepEqual(
        [answersOf(wire, clientId)[0]?.context, answersOf(wire, clientId)[0]?.http_code],
        ['PARSE_ERROR', 500],
      );
      assert.equal(wire.parseErrors.length, 0);
      assert.equal(await stored(key), 0);
    });

    it('when a CONNECT says 3.1.1 but carries MQTT 5 properties then it is not taken as a sign-in', async () => {
      const pair = await keyPair();
      const wire = await tcp(4);
      const bytes = connectOf(5, unique('v4c'), pair, { properties: { sessionExpiryInterval: 60 } });
      bytes[bytes.indexOf('MQTT') + 4] = 4;
      wire.write(bytes);
      assert.equal(await closedWithin(wire, 5000), true, 'closed');
      const connack = wire.received.find((p) => p.cmd === 'connack');
      assert.ok(connack === undefined || connack.returnCode !== 0, JSON.stringify(connack));
    });

    // MQTT over WebSocket

    for (const version of [4, 5] as const) {
      const name = version === 5 ? 'MQTT 5' : 'MQTT 3.1.1';
      it(`when an ${name} device over WebSocket sends two packets in one message, half a packet, then the rest with the start of the next, then each is read [MQTT-6.0.0-2]`, async () => {
        const pair = await keyPair();
        const key = await registeredThing(pair);
        const clientId = unique('wsf');
        const wire = await webSocket(version);
        const generate = (packet: Record<string, unknown>) => mqttPacket.generate(packet, { protocolVersion: version });
        wire.write(
          Buffer.concat([
            connectOf(version, clientId, pair),
            generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: ackTopic(clientId), qos: 0 }] }),
          ]),
        );
        await waitFor(wire, (p) => p.cmd === 'suback', 'the CONNACK and SUBACK of one message');
        assert.deepEqual(
          wire.received.map((p) => p.cmd),
          ['connack', 'suback'],
        );
        const texts = [1, 2].map((i) => signedEnvelope(pair, { thing_key: key, data: { i } }));
        const topic = deviceTopic(clientId, 'event');
        // Over MQTT 5 the second names its topic by the alias the first sets.
        const first = generate(
          publishOf(topic, texts[0] as string, 1, 2, version === 5 ? { topicAlias: 1 } : undefined),
        );
        const second = generate(
          version === 5
            ? publishOf('', texts[1] as string, 1, 3, { topicAlias: 1 })
            : publishOf(topic, texts[1] as string, 1, 3),
        );
        const half = Math.floor(first.length / 2);
        wire.write(first.subarray(0, half));
        await sleep(200);
        assert.equal(wire.received.filter((p) => p.cmd === 'puback').length, 0, 'half a packet: nothing yet');
        wire.write(Buffer.concat([first.subarray(half), second.subarray(0, 5)]));
        wire.write(Buffer.concat([second.subarray(5), generate({ cmd: 'pingreq' })]));
        await eventually(() => answersOf(wire, clientId).length === 2, 'both answers');
        await waitFor(wire, (p) => p.cmd === 'pingresp', 'the PINGRESP');
        assert.deepEqual(
          wire.received.filter((p) => p.cmd === 'puback').map((p) => [p.messageId, reasonOf(p) ?? 0]),
          [
            [2, 0],
            [3, 0],
          ],
        );
        // Answers may leave in another order (nothing orders them while they are not held back).
        assert.deepEqual(
          answersOf(wire, clientId)
            .map((a) => [a.context, a.http_code])
            .sort(),
          texts.map((text) => [hashOf(text), 200]).sort(),
        );
        assert.equal(await stored(key), 2);
        assert.equal(wire.parseErrors.length, 0);
      });
    }

    it('when an MQTT 5 device over WebSocket sends a second CONNECT, or a PUBLISH header longer than the Maximum Packet Size, then it gets DISCONNECT 0x82 or 0x95 and the WebSocket closes', async () => {
      const pair = await keyPair();
      const cases: [string, (clientId: string) => Buffer, number][] = [
        ['a second CONNECT', (clientId) => connectOf(5, clientId, pair), 0x82],
        [
          'a packet too large',
          () => Buffer.concat([Buffer.from([0x32]), varint(MAX_PACKET + 1), Buffer.alloc(100)]),
          0x95,
        ],
      ];
      for (const [what, bytes, reason] of cases) {
        const clientId = unique('wsd');
        const wire = await webSocket(5);
        const connack = await signIn(wire, clientId, pair);
        assert.equal(connack.properties?.maximumPacketSize, MAX_PACKET);
        wire.write(bytes(clientId));
        assert.equal(await closedWithin(wire, 5000), true, `${what}: closed`);
        assert.equal(reasonOf(wire.received.find((p) => p.cmd === 'disconnect')), reason, what);
      }
    });

    for (const over of ['TCP', 'WebSocket'] as const) {
      it(`when an MQTT 5 device over ${over} sets a Receive Maximum of 1 and sends four messages at once then their answers leave one at a time, in the order of the messages`, async () => {
        const pair = await keyPair();
        const key = await registeredThing(pair);
        const clientId = unique('rmo');
        const wire = over === 'TCP' ? await tcp(5) : await webSocket(5);
        try {
          await signIn(wire, clientId, pair, { properties: { receiveMaximum: 1 } });
          await subscribe(wire, 1, [{ topic: ackTopic(clientId), qos: 1 }]);
          const acknowledger = lateAcknowledger(wire, 200);
          const texts = [1, 2, 3, 4].map((i) => signedEnvelope(pair, { thing_key: key, data: { i } }));
          wire.write(
            Buffer.concat(
              texts.map((text) =>
                mqttPacket.generate(publishOf(deviceTopic(clientId, 'event'), text), { protocolVersion: 5 }),
              ),
            ),
          );
          await eventually(() => answersOf(wire, clientId).length === 4, 'four answers');
          assert.equal(acknowledger.most(), 1);
          assert.deepEqual(acknowledger.idsReused, []);
          assert.deepEqual(
            answersOf(wire, clientId).map((a) => a.context),
            texts.map(hashOf),
            'answers in the order of their messages (docs/devices.md, "MQTT")',
          );
        } finally {
          wire.end();
        }
      });
    }
  },
  {
    env: async () => ({
      MQTT_PORT: String(await freePort()),
      // A Receive Maximum small enough to send three times over.
      MQTT_MAX_PENDING: '40',
      MQTT_SESSION_EXPIRY: `${SESSION_EXPIRY}s`,
    }),
  },
);
