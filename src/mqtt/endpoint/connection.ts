/**
 * One device's connection to the device endpoint (docs/devices.md, "MQTT"): its packets read with
 * mqtt-packet (MQTT 3.1, 3.1.1 and 5), its login, its subscriptions (its own `httpAck` and its key
 * pair's instructions only), its messages handed to DeviceMessages, the instructions sent to it at
 * QoS 2, and its keep-alive. Anything the protocol does not allow where it arrives (a packet before
 * CONNECT, a second CONNECT, a malformed packet) closes this connection and no other.
 */
import {
  generate,
  type IConnectPacket,
  type IPublishPacket,
  type ISubscribePacket,
  type Packet,
  parser,
} from 'mqtt-packet';
import type { PacketIds } from '../ack-packets.ts';
import type { Ack } from '../signed-messages.ts';
import { ackTopic, type DeviceTopic, maySubscribe, parseDeviceTopic, thingOfTopic } from '../topics.ts';
import { type ConnectRefusal, connackAccepted, connackRefused, refusalBeforeLogin } from './connack.ts';
import type { MessageSource } from './device-messages.ts';
import { type InstructionsInFlight, instructionPacket } from './instructions-out.ts';
import { nextPacketId, Outbox } from './outbox.ts';
import { TopicAliases } from './topic-aliases.ts';

/** A device's socket: a TCP or TLS socket, or a WebSocket (websocket.ts). */
export interface DeviceSocket {
  readonly writable: boolean;
  write(bytes: Buffer): unknown;
  end(): unknown;
  end(bytes: Buffer): unknown;
  destroy(): unknown;
  /** Whether writes wait for the device to read (TCP and TLS sockets; `pause` and `resume` with it). */
  readonly writableNeedDrain?: boolean;
  pause?(): unknown;
  resume?(): unknown;
  /** `timeout` is emitted after this long without bytes from the device (0: never). */
  setTimeout(ms: number): unknown;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'timeout' | 'error', listener: () => void): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
}

/** What a connection needs of its endpoint. */
export interface ConnectionHost {
  /** The refusal of a new device for the endpoint's limits or its stop, or undefined. */
  admission(): ConnectRefusal | undefined;
  /** The key pair's secret, or null when the access key is unknown. */
  secretOf(accessKey: string): Promise<string | null>;
  /** Whether `password` is the device password of `accessKey` under `secretKey`. */
  passwordMatches(secretKey: string, accessKey: string, password: string): boolean;
  /** The connection has signed in (another of the same client id is closed). */
  signedIn(connection: DeviceConnection): void;
  /** A message the device published to one of its own device topics. */
  received(connection: DeviceConnection, topic: DeviceTopic, payload: Buffer): void;
  /** A message it published to any other topic, or under another client id (answered on its `httpAck`). */
  refused(connection: DeviceConnection, topic: string, payload: Buffer, status: 403 | 404): void;
  /** It subscribed to an instruction topic. */
  subscribed(connection: DeviceConnection, topic: string): void;
  /** An instruction was delivered (its QoS 2 handshake is done). */
  delivered(alertKey: string): void;
  /** The connection has closed. */
  closed(connection: DeviceConnection): void;
  /** A packet was refused for its length or the bytes held (the endpoint's limits). */
  prepareParser(connection: DeviceConnection, parser: EndpointParser): () => void;
  readonly limits: {
    connectTimeoutMs: number;
    receiveMaximum: number;
    maximumPacketSize: number;
    topicAliasMaximum: number;
  };
}

export type EndpointParser = ReturnType<typeof parser>;

type State = 'new' | 'login' | 'open' | 'closed';

/** Refused subscriptions: MQTT 3.1.1's failure, MQTT 5's "not authorized". */
const SUBSCRIPTION_REFUSED = { v3: 0x80, v5: 0x87 };
const PINGRESP = Buffer.from([0xd0, 0]);

export class DeviceConnection implements MessageSource {
  state: State = 'new';
  clientId = '';
  accessKey = '';
  secretKey = '';
  version = 4;
  /** Packet ids of the answers and instructions sent to the device. */
  readonly ids: PacketIds = { _nextId: 1 };
  /** Its `httpAck` topic, once signed in. */
  ackTopic = '';
  /** The QoS of its `httpAck` subscription, -1 without one. */
  ackQos = -1;
  /** Its instruction subscriptions: topic filter, granted QoS. */
  private instructionFilters: Map<string, number> | undefined;
  private outbox: Outbox | undefined;
  private readonly parser: EndpointParser;
  /** Packets that arrived while its login was being checked, done once it has been. */
  private waiting: Packet[] | undefined;
  /** The packet ids of its QoS 2 messages received and not yet released. */
  private received2: Set<number> | undefined;
  private aliases: TopicAliases | undefined;
  private will: IConnectPacket['will'];
  private lastTopic: { name: string; topic: DeviceTopic | undefined } | undefined;
  private releaseParser: () => void;

  constructor(
    readonly id: number,
    readonly socket: DeviceSocket,
    private readonly host: ConnectionHost,
    private readonly instructions: InstructionsInFlight,
  ) {
    this.parser = parser();
    this.parser.on('packet', (packet) => {
      // A packet the endpoint cannot answer ends its own connection, never the server.
      try {
        this.onPacket(packet);
      } catch {
        this.destroy();
      }
    });
    this.parser.on('error', () => this.destroy());
    this.releaseParser = host.prepareParser(this, this.parser);
    socket.setTimeout(host.limits.connectTimeoutMs);
    socket.on('timeout', () => this.destroy());
    socket.on('data', (chunk: Buffer) => {
      if (this.state === 'closed') return;
      this.parser.parse(chunk);
      // While the device does not read what it is sent (its answers), nothing more is read from it.
      if (socket.writableNeedDrain && socket.pause && this.state === 'open') {
        socket.pause();
        socket.once('drain', () => socket.resume?.());
      }
    });
    socket.on('error', () => {});
    socket.once('close', () => this.onClose());
  }

  /** Answers a message on the device's `httpAck`. */
  answer(ack: Ack): void {
    if (this.state === 'open') this.outbox?.ack(ack);
  }

  /** Closes the connection once what is due to it is written. */
  close(): void {
    if (this.state === 'closed') return;
    this.outbox?.flush();
    this.state = 'closed';
    this.socket.end();
  }

  /** Writes what is due now (a stop writes its last answers before it ends the connection). */
  flush(): void {
    this.outbox?.flush();
  }

  /** Whether one of its instruction subscriptions covers `topic`; the QoS granted, or -1. */
  instructionQos(topic: string): number {
    if (!this.instructionFilters) return -1;
    let qos = -1;
    for (const [filter, granted] of this.instructionFilters) if (covers(filter, topic)) qos = Math.max(qos, granted);
    return qos;
  }

  /** Sends an instruction at `qos` (at most 2); answers once it is written. */
  sendInstruction(topic: string, payload: string, alertKey: string, qos: number): void {
    if (this.state !== 'open') return;
    let messageId: number | undefined;
    if (qos > 0) {
      do messageId = nextPacketId(this.ids);
      while (this.instructions.has(this, messageId));
      this.instructions.add(this, messageId, alertKey);
    }
    this.outbox?.packet(instructionPacket(topic, payload, qos, messageId, this.version));
  }

  private destroy(): void {
    this.state = 'closed';
    this.socket.destroy();
  }

  private onClose(): void {
    const wasOpen = this.state === 'open';
    this.state = 'closed';
    this.outbox?.discard();
    this.releaseParser();
    this.instructions.forget(this);
    // A device that went away without DISCONNECT leaves its will, when it set one to its own device topic.
    if (wasOpen && this.will) this.publishWill(this.will);
    this.host.closed(this);
  }

  private onPacket(packet: Packet) {
    if (this.state === 'closed') return;
    if (this.state === 'login') {
      // Another CONNECT while the first is checked is as wrong as one after it.
      if (packet.cmd === 'connect') return this.destroy();
      this.waiting ??= [];
      this.waiting.push(packet);
      return;
    }
    if (this.state === 'new') {
      if (packet.cmd !== 'connect') return this.destroy();
      return this.connect(packet);
    }
    switch (packet.cmd) {
      case 'publish':
        return this.publish(packet);
      case 'pubrel':
        this.received2?.delete(packet.messageId as number);
        return this.outbox?.packet(confirmation(0x70, packet.messageId as number));
      case 'puback':
      case 'pubcomp': {
        const alertKey = this.instructions.done(this, packet.messageId as number);
        if (alertKey !== undefined) this.host.delivered(alertKey);
        return;
      }
      case 'pubrec':
        // An instruction received: released at once (the device then answers PUBCOMP).
        return this.outbox?.packet(confirmation(0x62, packet.messageId as number));
      case 'subscribe':
        // MQTT requires at least one topic filter in each (its parser lets an empty one through).
        if (packet.subscriptions.length === 0) return this.destroy();
        return this.subscribe(packet);
      case 'unsubscribe':
        if (packet.unsubscriptions.length === 0) return this.destroy();
        for (const topic of packet.unsubscriptions) {
          if (topic === this.ackTopic) this.ackQos = -1;
          this.instructionFilters?.delete(topic);
        }
        return this.outbox?.packet(
          this.version === 5
            ? generateFor(this.version, {
                cmd: 'unsuback',
                messageId: packet.messageId as number,
                granted: packet.unsubscriptions.map(() => 0),
              })
            : confirmation(0xb0, packet.messageId as number),
        );
      case 'pingreq':
        return this.outbox?.packet(PINGRESP);
      case 'disconnect':
        this.will = undefined;
        return this.close();
      default:
        // A second CONNECT, a server's packet, or AUTH (no enhanced authentication here).
        return this.destroy();
    }
  }

  private connect(packet: IConnectPacket) {
    this.version = packet.protocolVersion ?? 4;
    const early = refusalBeforeLogin(packet) ?? this.host.admission();
    if (early) return this.refuse(early);
    this.state = 'login';
    const accessKey = packet.username as string;
    const password = (packet.password as Buffer).toString('utf8');
    this.host.secretOf(accessKey).then(
      (secretKey) => {
        if (this.state !== 'login') return;
        if (secretKey === null || !this.host.passwordMatches(secretKey, accessKey, password)) {
          return this.refuse('credentials');
        }
        const refusal = this.host.admission();
        if (refusal) return this.refuse(refusal);
        this.open(packet, accessKey, secretKey);
      },
      () => {
        if (this.state === 'login') this.refuse('unavailable');
      },
    );
  }

  private open(packet: IConnectPacket, accessKey: string, secretKey: string) {
    // An empty client id (allowed with a clean session) is given one.
    const assigned = packet.clientId === '' ? `tb${this.id.toString(36)}` : undefined;
    this.clientId = assigned ?? packet.clientId;
    this.ackTopic = ackTopic(this.clientId);
    this.accessKey = accessKey;
    this.secretKey = secretKey;
    this.will = packet.will;
    this.state = 'open';
    const { limits } = this.host;
    if (this.version === 5 && limits.topicAliasMaximum > 0) this.aliases = new TopicAliases(limits.topicAliasMaximum);
    const outbox = new Outbox(this);
    this.outbox = outbox;
    // Keep-alive: a device silent for one and a half times its interval is gone (0: no keep-alive).
    this.socket.setTimeout(packet.keepalive ? packet.keepalive * 1500 : 0);
    this.socket.write(connackAccepted(this.version, limits, assigned));
    this.host.signedIn(this);
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) for (const next of waiting) this.onPacket(next);
  }

  private refuse(refusal: ConnectRefusal) {
    this.state = 'closed';
    this.socket.end(connackRefused(this.version, refusal));
  }

  private publish(packet: IPublishPacket) {
    let name = packet.topic;
    if (this.aliases) {
      const resolved = this.aliases.resolve(name, packet.properties?.topicAlias);
      if (resolved === undefined) return this.destroy();
      name = resolved;
    }
    const id = packet.messageId as number;
    if (packet.qos === 2) {
      this.received2 ??= new Set();
      const again = this.received2.has(id);
      this.received2.add(id);
      this.outbox?.packet(confirmation(0x50, id));
      // Sent again before its PUBREL: it was taken the first time.
      if (again) return;
    }
    const topic = this.topicOf(name);
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const ownTopic = topic !== undefined && topic.clientId === this.clientId;
    if (packet.qos === 1) {
      // MQTT 5 says "not authorized" for a publish under another client id, which gets no answer.
      if (this.version === 5 && topic !== undefined && !ownTopic) {
        return this.outbox?.packet(generateFor(5, { cmd: 'puback', messageId: id, reasonCode: 0x87 }));
      }
      this.outbox?.puback(id);
    }
    if (ownTopic) return this.host.received(this, topic, payload);
    if (this.version === 5 && topic !== undefined) return;
    this.host.refused(this, name, payload, topic === undefined ? 404 : 403);
  }

  private subscribe(packet: ISubscribePacket) {
    const granted: number[] = [];
    const instructionTopics: string[] = [];
    for (const { topic, qos } of packet.subscriptions) {
      if (!maySubscribe(topic, this.clientId, this.accessKey)) {
        granted.push(this.version === 5 ? SUBSCRIPTION_REFUSED.v5 : SUBSCRIPTION_REFUSED.v3);
        continue;
      }
      const given = Math.min(qos, 2);
      granted.push(given);
      if (topic === this.ackTopic) {
        this.ackQos = Math.min(given, 1);
      } else {
        this.instructionFilters ??= new Map();
        this.instructionFilters.set(topic, given);
        if (thingOfTopic(topic) !== undefined) instructionTopics.push(topic);
      }
    }
    this.outbox?.packet(generateFor(this.version, { cmd: 'suback', messageId: packet.messageId as number, granted }));
    // Instructions not yet acknowledged follow the SUBACK (instructions.ts, "subscribed").
    for (const topic of instructionTopics) this.host.subscribed(this, topic);
  }

  /** The device topic of a topic name; a device publishes to the same one message after message. */
  private topicOf(name: string): DeviceTopic | undefined {
    if (this.lastTopic?.name === name) return this.lastTopic.topic;
    const topic = parseDeviceTopic(name);
    this.lastTopic = { name, topic };
    return topic;
  }

  private publishWill(will: NonNullable<IConnectPacket['will']>): void {
    const topic = parseDeviceTopic(will.topic);
    if (topic === undefined || topic.clientId !== this.clientId) return;
    const payload = typeof will.payload === 'string' ? Buffer.from(will.payload) : will.payload;
    this.host.received(this, topic, payload);
  }
}

/** PUBACK (0x40), PUBREC (0x50), PUBREL (0x62), PUBCOMP (0x70), UNSUBACK (0xb0) of MQTT 3.1.1, or of MQTT 5 with success. */
function confirmation(first: number, messageId: number): Buffer {
  return Buffer.from([first, 2, messageId >> 8, messageId & 0xff]);
}

/** A packet as mqtt-packet writes it for the connection's protocol version. */
function generateFor(version: number, packet: Packet): Buffer {
  return generate(packet, { protocolVersion: version });
}

/** Whether a subscription's filter covers a topic (the only wildcard a device may use is a `+` level). */
function covers(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  return f.length === t.length && f.every((part, i) => part === '+' || part === t[i]);
}
