/**
 * One device's connection to the device endpoint (docs/devices.md, "MQTT"): its packets read with
 * mqtt-packet (MQTT 3.1, 3.1.1 and 5), its login, its subscriptions (its own `httpAck` and its key
 * pair's instructions only), its messages handed to DeviceMessages, the instructions sent to it at
 * QoS 2, and its keep-alive. Anything the protocol does not allow where it arrives (a packet before
 * CONNECT, a second CONNECT, a malformed packet) closes this connection and no other.
 */
import { randomBytes } from 'node:crypto';
import { generate, type IConnectPacket, type IPublishPacket, type ISubscribePacket, type Packet } from 'mqtt-packet';
import type { Ack } from '../signed-messages.ts';
import { ackTopic, type DeviceTopic, maySubscribe, parseDeviceTopic, thingOfTopic } from '../topics.ts';
import type { PacketIds } from './ack-packets.ts';
import { AnswerOrder } from './answer-order.ts';
import { type ConnectRefusal, connackAccepted, connackRefused, refusalBeforeLogin } from './connack.ts';
import type { MessageSource } from './device-messages.ts';
import { instructionPacket } from './instructions-out.ts';
import { Outbox } from './outbox.ts';
import { filterIsMalformed, propertiesFault, topicNameFault } from './packet-checks.ts';
import { DeviceParser, type PacketBounds, type PacketReader, PacketTooLargeError } from './packet-parser.ts';
import type { OutgoingMessage, Session } from './sessions.ts';
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
  /**
   * A WebSocket takes messages as long as the endpoint's packets once the device has signed in (their
   * clients send a packet in one message); before, as long as a CONNECT may be.
   */
  allowMessages?(bytes: number): unknown;
  pause?(): unknown;
  resume?(): unknown;
  /** `timeout` is emitted after this long without bytes from the device (0: never). */
  setTimeout(ms: number): unknown;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  /** A WebSocket's: the bytes it holds of a message not yet complete, after each read. */
  on(event: 'held', listener: (bytes: number) => void): unknown;
  on(event: 'timeout' | 'error' | 'close', listener: () => void): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
}

/** What a connection needs of its endpoint. */
export interface ConnectionHost {
  /** The refusal of a new device for the endpoint's limits or its stop, or undefined. */
  admission(): ConnectRefusal | undefined;
  /**
   * The key pair of an access key, or undefined when it is unknown. Its access key is the same string
   * for all the devices of the key pair that sign in together, where each CONNECT brings its own copy.
   */
  keyPairOf(accessKey: string): Promise<{ readonly accessKey: string; readonly secretKey: string } | undefined>;
  /** Whether `password` is the device password of `accessKey` under `secretKey`. */
  passwordMatches(secretKey: string, accessKey: string, password: string): boolean;
  /**
   * The session of a connection signing in (sessions.ts): the one its client id left, unless it asks
   * for a clean start, or a new one kept `expirySeconds` after it closes (undefined: as long as the
   * endpoint keeps sessions). Answers whether it resumed one, and how long it is kept, ms.
   */
  openSession(
    connection: DeviceConnection,
    cleanStart: boolean,
    expirySeconds: number | undefined,
  ): { session: Session; present: boolean };
  /** How long a session is kept for an expiry interval a device set, ms. */
  sessionExpiryMs(seconds: number): number;
  /** The connection has signed in (another of the same client id is closed). */
  signedIn(connection: DeviceConnection): void;
  /** A message the device published to one of its own device topics. */
  received(connection: DeviceConnection, topic: DeviceTopic, payload: Buffer): void;
  /** A message it published to a topic that is no device topic (answered 404 on its `httpAck`). */
  refused(connection: DeviceConnection, topic: string, payload: Buffer): void;
  /** It subscribed to an instruction topic. */
  subscribed(connection: DeviceConnection, topic: string): void;
  /** An instruction was delivered (its QoS 2 handshake is done). */
  delivered(alertKey: string): void;
  /** The connection has closed. */
  closed(connection: DeviceConnection): void;
  /** The bounds of its packets (packet-parser.ts), the same object for all connections. */
  readonly packetBounds: PacketBounds;
  readonly limits: {
    connectTimeoutMs: number;
    receiveMaximum: number;
    maximumPacketSize: number;
    topicAliasMaximum: number;
  };
}

type State = 'new' | 'login' | 'open' | 'closed';

/**
 * The MQTT 5 reason codes the endpoint sends, whatever the packet: a DISCONNECT's (why the server closes
 * an open connection, told to the device before it does), a SUBACK's or a PUBACK's and PUBREC's refusal.
 */
export const ReasonCode = {
  malformed: 0x81,
  protocolError: 0x82,
  notAuthorized: 0x87,
  packetIdentifierNotFound: 0x92,
  shuttingDown: 0x8b,
  keepAliveTimeout: 0x8d,
  takenOver: 0x8e,
  topicAliasInvalid: 0x94,
  packetTooLarge: 0x95,
  quotaExceeded: 0x97,
  retainNotSupported: 0x9a,
  sharedSubscriptionsNotSupported: 0x9e,
  subscriptionIdentifiersNotSupported: 0xa1,
} as const;

/** A refused subscription over MQTT 3.1.1, which has one failure code for any reason. */
const SUBSCRIPTION_FAILURE_V3 = 0x80;

/** How long a device whose connection the server closes (told why, over MQTT 5) has to close its side, ms. */
const CLOSE_GRACE_MS = 2000;

/** mqtt-packet's error for a CONNECT of a protocol level it does not read (3, 4 and 5). */
const UNSUPPORTED_PROTOCOL = 'Invalid protocol version';
const PINGRESP = Buffer.from([0xd0, 0]);
const isPingreq = (chunk: Buffer) => chunk.length === 2 && chunk[0] === 0xc0 && chunk[1] === 0;
/** Socket errors end in its `close`, where the connection ends; one function for all. */
const ignore = () => {};
/**
 * Answers that may wait for an MQTT 5 device to acknowledge those before them (its Receive Maximum)
 * before its connection is closed: one that publishes but acknowledges nothing would have them pile up.
 */
const MAX_WAITING_FOR_ROOM = 1000;
/** Packets a device may send after its CONNECT before the login is checked (a SUBSCRIBE, a register...). */
const MAX_WAITING_FOR_LOGIN = 100;

export class DeviceConnection implements MessageSource, PacketReader {
  state: State = 'new';
  clientId = '';
  accessKey = '';
  secretKey = '';
  version = 4;
  /** Its `httpAck` topic, once signed in. */
  ackTopic = '';
  /**
   * MQTT 5: the longest packet the device takes (its CONNECT's Maximum Packet Size), when it set one:
   * of the answers (outbox.ts) and instructions sent to it, not of what it sends (the endpoint's bounds).
   */
  clientMaxPacketBytes: number | undefined;
  /** Its subscriptions and what it has in flight, once signed in (sessions.ts). */
  session: Session | undefined;
  private outbox: Outbox | undefined;
  private readonly parser: DeviceParser;
  /** Packets that arrived while its login was being checked, done once it has been. */
  private waiting: Packet[] | undefined;
  private aliases: TopicAliases | undefined;
  private will: IConnectPacket['will'];
  readonly answerOrder = new AnswerOrder();
  private lastTopic: { name: string; topic: DeviceTopic | undefined } | undefined;
  /** Reads wait for the device to read its answers (its socket's send buffer is full). */
  private waitingForDrain = false;
  /** Reads are to wait for the server to take its messages again (holdReading), and have been paused for it. */
  private holdAsked = false;
  private pausedForHold = false;
  /** Reads have been paused while its login is checked. */
  private pausedForLogin = false;
  /**
   * How long the device may stay silent (its keep-alive and a half, ms; 0: for ever), and when it last
   * sent a whole packet: bytes of a packet it never ends do not keep it alive.
   */
  private silenceMs = 0;
  private lastReadAt = 0;
  /** Whether the chunk being read ended a packet. */
  private packetRead = false;
  /**
   * Until its CONNECT has come whole: the time it has for it, counted from the connection's start. The
   * socket's own timeout is put off by any byte, and a CONNECT sent a byte at a time would hold the
   * connection for ever.
   */
  private connectDeadline: NodeJS.Timeout | undefined;
  /** Once the server closes the connection, the time its device has to close its side. */
  private grace: NodeJS.Timeout | undefined;
  /** Closed for another connection of its client id (a take-over), which a delayed will does not outlive. */
  private takenOver = false;

  constructor(
    readonly id: number,
    readonly socket: DeviceSocket,
    private readonly host: ConnectionHost,
  ) {
    // Everything a connection holds while it is open is held once for every device: what is the same
    // for all of them (the parser's bounds, the error listener) is shared (packet-parser.ts).
    this.parser = new DeviceParser(this, host.packetBounds);
    socket.setTimeout(host.limits.connectTimeoutMs);
    if (host.limits.connectTimeoutMs > 0) {
      this.connectDeadline = setTimeout(() => {
        if (this.state === 'new') this.destroy();
      }, host.limits.connectTimeoutMs);
      this.connectDeadline.unref();
    }
    socket.on('timeout', () => this.onTimeout());
    socket.on('data', (chunk: Buffer) => {
      if (this.state === 'closed') return;
      const now = performance.now();
      // A device that sends bytes but no whole packet puts the socket's timeout off: silent as long as
      // it may be, it is gone all the same.
      if (this.state === 'open' && this.silenceMs > 0 && now - this.lastReadAt > this.silenceMs) {
        return this.destroy(ReasonCode.keepAliveTimeout);
      }
      // A PINGREQ read alone, between packets, is answered without the parser: it is what an idle
      // fleet sends most (every device once a keep-alive), and the parser would make it a packet
      // object and an event. Bytes of a packet begun before go through the parser, whatever they are.
      if (this.state === 'open' && isPingreq(chunk) && !this.parser.holdsPartialPacket()) {
        this.lastReadAt = now;
        this.outbox?.packet(PINGRESP);
        return;
      }
      const duringLogin = this.state === 'login';
      this.packetRead = false;
      this.parser.parse(chunk);
      if (this.packetRead) this.lastReadAt = now;
      // Bytes that come while its login is checked (a lookup of the store, which may be slow): nothing
      // more is read until it is done, and what the device sends meanwhile waits in TCP's buffers, not
      // in the connection's memory (`waiting`). Most devices send nothing before the CONNACK, and
      // their sockets are not paused and resumed for nothing.
      if (duringLogin && this.state === 'login' && socket.pause && !this.pausedForLogin) {
        this.pausedForLogin = true;
        socket.pause();
      }
      if (this.state !== 'open' || !socket.pause) return;
      // While the device does not read what it is sent (its answers), nothing more is read from it.
      if (socket.writableNeedDrain && !this.waitingForDrain) {
        this.waitingForDrain = true;
        socket.pause();
        socket.once('drain', () => {
          this.waitingForDrain = false;
          this.resumeReading();
        });
      }
      // Nor while the server takes no more of its messages (holdReading).
      if (this.holdAsked && !this.pausedForHold) {
        this.pausedForHold = true;
        socket.pause();
      }
    });
    socket.on('held', (bytes: number) => {
      if (this.state !== 'closed') this.parser.transportHolds(bytes);
    });
    socket.on('error', ignore);
    socket.on('close', () => this.onClose());
  }

  /** A packet read (packet-parser.ts). One the endpoint cannot answer ends its own connection, never the server. */
  parsed(packet: Packet): void {
    this.packetRead = true;
    try {
      this.onPacket(packet);
    } catch {
      this.destroy();
    }
  }

  /** Bytes that are no packet, or pass the endpoint's bounds (packet-parser.ts). */
  malformed(error: Error): void {
    // A CONNECT of a protocol level the endpoint does not speak is answered, as MQTT 3.1.1 asks, in
    // its CONNACK (which MQTT 5 clients read too): mqtt-packet says so only in its error's message.
    if (this.state === 'new' && error.message === UNSUPPORTED_PROTOCOL) this.refuse('protocol');
    else this.destroy(error instanceof PacketTooLargeError ? ReasonCode.packetTooLarge : ReasonCode.malformed);
  }

  /** Packet ids of the answers and instructions sent to the device (its session's). */
  get ids(): PacketIds {
    return (this.session as Session).ids;
  }

  /** The QoS of its `httpAck` subscription, -1 without one. */
  get ackQos(): number {
    return this.session?.ackQos ?? -1;
  }

  /** Whether its QoS 1 answers are kept until acknowledged: its session outlives the connection. */
  get tracksAnswers(): boolean {
    return this.session?.kept === true;
  }

  /** A QoS 1 answer of a kept session being sent: the packet id it takes. */
  track(payload: string): number {
    // An answer always takes one (Session.send).
    return (this.session as Session).send({ topic: this.ackTopic, payload, qos: 1 }) as number;
  }

  /**
   * Answers a message on the device's `httpAck`. Once the connection has closed, a session that
   * outlives it takes the answer: to the connection that has resumed it, or queued until one does.
   */
  answer(ack: Ack): void {
    if (this.state === 'open') {
      this.outbox?.ack(ack);
      // A device that keeps publishing but acknowledges none of its answers would have them pile up.
      if ((this.outbox?.waiting ?? 0) > MAX_WAITING_FOR_ROOM) this.destroy(ReasonCode.quotaExceeded);
      return;
    }
    const session = this.session;
    if (!session?.kept || session.ackQos < 1) return;
    const holder = session.holder;
    if (holder instanceof DeviceConnection && holder !== this && holder.state === 'open') {
      holder.answer(ack);
      return;
    }
    session.queue({ topic: this.ackTopic, payload: JSON.stringify(ack), qos: 1 });
  }

  /**
   * Reads no more from the device once the bytes read now are done, until `releaseReading`: a message
   * of it was refused for overload, or many are being done (docs/devices.md, "Overload"), and what it
   * sends meanwhile waits in TCP's buffers rather than being read only to be refused too.
   */
  holdReading(): void {
    this.holdAsked = true;
  }

  get readingHeld(): boolean {
    return this.holdAsked;
  }

  releaseReading(): void {
    this.holdAsked = false;
    if (!this.pausedForHold) return;
    this.pausedForHold = false;
    this.resumeReading();
  }

  private resumeReading(): void {
    if (this.state === 'closed' || this.pausedForHold || this.waitingForDrain) return;
    this.socket.resume?.();
  }

  /**
   * Closes the connection once what is due to it is written; an MQTT 5 device that signed in is told
   * why first, when the server closes it for a reason (`reasonCode`, ReasonCode).
   */
  close(reasonCode?: number): void {
    if (this.state === 'closed') return;
    this.outbox?.flush();
    const told = this.tellable(reasonCode);
    this.state = 'closed';
    if (reasonCode === ReasonCode.takenOver) this.takenOver = true;
    if (told) this.socket.end(generateFor(5, { cmd: 'disconnect', reasonCode }));
    else this.socket.end();
    // What it read of an unfinished packet leaves the endpoint's budget now, not when the socket closes.
    this.parser.release();
    // Reads paused (its login, a hold, a device not reading its answers) would never see the device's
    // end, and the connection would stay: read again, and what comes is dropped.
    if (this.pausedForLogin || this.pausedForHold || this.waitingForDrain) this.socket.resume?.();
    // The device is to close its side now. One that does not is cut off: by a timer of its own, which,
    // unlike the socket's idle timeout, bytes it keeps sending do not put off. The idle timeout, which
    // an instruction may have left short (sendInstruction), is not to cut the grace short.
    this.socket.setTimeout(0);
    this.grace = setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS);
    this.grace.unref();
  }

  /** Whether the device can be told why its connection closes: MQTT 5, signed in, its socket writable. */
  private tellable(reasonCode: number | undefined): reasonCode is number {
    return reasonCode !== undefined && this.state === 'open' && this.version === 5 && this.socket.writable;
  }

  /** Writes what is due now (a stop writes its last answers before it ends the connection). */
  flush(): void {
    this.outbox?.flush();
  }

  /** Whether one of its instruction subscriptions covers `topic`; the QoS granted, or -1. */
  instructionQos(topic: string): number {
    return this.session?.instructionQos(topic) ?? -1;
  }

  /** Sends an instruction at `qos` (at most 2), kept in its session until the device has it. */
  sendInstruction(topic: string, payload: string, alertKey: string, qos: number): void {
    const session = this.session;
    if (!session) return;
    // The socket's timeout counts the server's writes too: a device gone silent that is sent
    // instructions more often than its keep-alive would never time out. Silent that long, it is gone.
    if (this.state === 'open' && this.silenceMs > 0 && performance.now() - this.lastReadAt > this.silenceMs) {
      this.destroy(ReasonCode.keepAliveTimeout);
    }
    // The write puts the socket's timeout off: it is to come when the device's silence ends, not later.
    if (this.state === 'open' && this.silenceMs > 0) {
      this.socket.setTimeout(Math.max(1, Math.ceil(this.silenceMs - (performance.now() - this.lastReadAt))));
    }
    if (qos <= 0) {
      if (this.state !== 'open') return;
      const bytes = instructionPacket(topic, payload, 0, undefined, this.version);
      if (this.fits(bytes)) this.outbox?.packet(bytes);
      return;
    }
    // A resumed session already carries it: sent again after the device's new subscription, it would come twice.
    if (session.kept && session.holds(alertKey)) return;
    const message: OutgoingMessage = { topic, payload, qos: qos >= 2 ? 2 : 1, alertKey };
    if (this.state === 'open') {
      this.sendKept(message);
      return;
    }
    if (!session.kept) return;
    // Closing: the connection that has resumed its session (a take-over) sends it, as it sends the
    // answers (answer); else the session keeps it for the connection that resumes it.
    const holder = session.holder;
    if (holder instanceof DeviceConnection && holder !== this && holder.state === 'open') {
      holder.sendInstruction(topic, payload, alertKey, qos);
    } else {
      session.queue(message);
    }
  }

  /**
   * Ends the connection at once; an MQTT 5 device that signed in is told why first (`reasonCode`,
   * ReasonCode), and the connection ends after what is due to it.
   */
  private destroy(reasonCode?: number): void {
    if (this.tellable(reasonCode)) {
      this.close(reasonCode);
      return;
    }
    this.state = 'closed';
    this.socket.destroy();
  }

  private onClose(): void {
    this.state = 'closed';
    clearTimeout(this.grace);
    clearTimeout(this.connectDeadline);
    // Answers not yet written go to a session that outlives the connection (answer), else nowhere.
    const unwritten = this.outbox?.discard();
    if (unwritten) for (const ack of unwritten) this.answer(ack);
    this.parser.release();
    // A device that went away without DISCONNECT leaves its will, when it set one to its own device
    // topic: whether it closed the connection or the server did (keep-alive, a bad packet, a take-over).
    // Only a connection that signed in has one (open). A stopping server refuses it as it refuses every
    // message after the stop began (device-messages.ts): the device is not gone, the server is.
    if (this.will) this.leaveWill(this.will);
    this.host.closed(this);
  }

  private onPacket(packet: Packet) {
    if (this.state === 'closed') return;
    if (this.state === 'login') {
      // Another CONNECT while the first is checked is as wrong as one after it.
      if (packet.cmd === 'connect') return this.destroy();
      this.waiting ??= [];
      // Reads pause during the login, but the bytes read with the CONNECT may hold many small packets.
      if (this.waiting.length >= MAX_WAITING_FOR_LOGIN) return this.destroy();
      this.waiting.push(packet);
      return;
    }
    if (this.state === 'new') {
      if (packet.cmd !== 'connect') return this.destroy();
      return this.connect(packet);
    }
    // A packet id of 0 is none (MQTT 3.1.1 §2.3.1, MQTT 5 §2.2.1).
    if ((packet as { messageId?: number }).messageId === 0) return this.destroy(ReasonCode.protocolError);
    if (this.version === 5) {
      const fault = propertiesFault(packet.cmd, (packet as { properties?: Record<string, unknown> }).properties);
      if (fault) return this.destroy(ReasonCode[fault]);
    }
    switch (packet.cmd) {
      case 'publish':
        return this.publish(packet);
      case 'pubrel': {
        const id = packet.messageId as number;
        const known = this.session?.releasedQos2(id) ?? false;
        // MQTT 5 §3.7.2.1 says of an id the server has no flow of: "Packet Identifier not found".
        if (known || this.version !== 5) return this.outbox?.packet(confirmation(0x70, id));
        return this.outbox?.packet(
          generateFor(5, { cmd: 'pubcomp', messageId: id, reasonCode: ReasonCode.packetIdentifierNotFound }),
        );
      }
      case 'puback':
        // MQTT 5: a PUBACK of 0x80 or more refuses the message; an instruction refused stays pending.
        return this.acknowledged(packet.messageId as number, (packet.reasonCode ?? 0) < 0x80, 1);
      case 'pubcomp':
        return this.acknowledged(packet.messageId as number, true, 2);
      case 'pubrec':
        // MQTT 5: a PUBREC refusing the message ends its flow (no PUBREL, no PUBCOMP).
        // The instruction was not taken: it stays pending, not delivered.
        if ((packet.reasonCode ?? 0) >= 0x80) return this.acknowledged(packet.messageId as number, false);
        // An instruction received: released at once (the device then answers PUBCOMP). MQTT 5 §3.6.2.1
        // says of an id the server sent nothing under: "Packet Identifier not found".
        if (this.session?.release(packet.messageId as number) || this.version !== 5) {
          return this.outbox?.packet(confirmation(0x62, packet.messageId as number));
        }
        return this.outbox?.packet(
          generateFor(5, {
            cmd: 'pubrel',
            messageId: packet.messageId as number,
            reasonCode: ReasonCode.packetIdentifierNotFound,
          }),
        );
      case 'subscribe':
        // MQTT requires at least one topic filter in each (its parser lets an empty one through).
        if (packet.subscriptions.length === 0) return this.destroy(ReasonCode.protocolError);
        if (packet.subscriptions.some((s) => filterIsMalformed(s.topic))) return this.destroy(ReasonCode.malformed);
        return this.subscribe(packet);
      case 'unsubscribe':
        if (packet.unsubscriptions.length === 0) return this.destroy(ReasonCode.protocolError);
        if (packet.unsubscriptions.some(filterIsMalformed)) return this.destroy(ReasonCode.malformed);
        for (const topic of packet.unsubscriptions) {
          if (!this.session) break;
          if (topic === this.ackTopic) this.session.ackQos = -1;
          this.session.unsubscribe(topic);
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
        // A PINGREQ has no more than its fixed header.
        if (packet.length) return this.destroy(ReasonCode.malformed);
        return this.outbox?.packet(PINGRESP);
      case 'disconnect':
        // MQTT 5 §3.14.2.2.2: a session that was to end with its connection (an expiry of 0 in the
        // CONNECT) may not be made to outlive it at DISCONNECT. Such a DISCONNECT is no valid one: the
        // will stays, and the server closes the connection for a protocol error.
        if (this.raisesExpiryFromZero(packet.properties?.sessionExpiryInterval)) {
          return this.destroy(ReasonCode.protocolError);
        }
        // A normal disconnection (MQTT 3.x's DISCONNECT, MQTT 5's 0x00) withdraws the will; MQTT 5's
        // others ("Disconnect with Will Message", 0x04, and the errors from 0x80) leave it ([MQTT-3.1.2-8]).
        if ((packet.reasonCode ?? 0) === 0) this.will = undefined;
        this.disconnect(packet.properties?.sessionExpiryInterval);
        return this.close();
      default:
        // A second CONNECT, a server's packet, or AUTH (no enhanced authentication here).
        return this.destroy(ReasonCode.protocolError);
    }
  }

  private connect(packet: IConnectPacket) {
    clearTimeout(this.connectDeadline);
    this.connectDeadline = undefined;
    this.version = packet.protocolVersion ?? 4;
    // Given twice it is a list, and the CONNECT is refused (refusalBeforeLogin) in a CONNACK of no limit.
    const clientMax = packet.properties?.maximumPacketSize;
    if (this.version === 5 && typeof clientMax === 'number') this.clientMaxPacketBytes = clientMax;
    const early = refusalBeforeLogin({ ...packet, protocolVersion: this.version }) ?? this.host.admission();
    if (early) return this.refuse(early);
    this.state = 'login';
    const accessKey = packet.username as string;
    const password = (packet.password as Buffer).toString('utf8');
    this.host.keyPairOf(accessKey).then(
      (keyPair) => {
        if (this.state !== 'login') return;
        if (keyPair === undefined || !this.host.passwordMatches(keyPair.secretKey, accessKey, password)) {
          return this.refuse('credentials');
        }
        const refusal = this.host.admission();
        if (refusal) return this.refuse(refusal);
        this.open(packet, keyPair.accessKey, keyPair.secretKey);
      },
      () => {
        if (this.state === 'login') this.refuse('unavailable');
      },
    );
  }

  private open(packet: IConnectPacket, accessKey: string, secretKey: string) {
    // An empty client id (allowed with a clean session) is given one no device has: a device may choose
    // any id, and one it chose that the server then gave another would be taken over.
    const assigned = packet.clientId === '' ? `tb-${randomBytes(12).toString('base64url')}` : undefined;
    this.clientId = assigned ?? packet.clientId;
    this.ackTopic = ackTopic(this.clientId);
    this.accessKey = accessKey;
    this.secretKey = secretKey;
    this.will = packet.will;
    this.state = 'open';
    this.parser.opened();
    this.socket.allowMessages?.(this.host.packetBounds.maxPacketBytes);
    const { limits } = this.host;
    if (this.version === 5 && limits.topicAliasMaximum > 0) this.aliases = new TopicAliases(limits.topicAliasMaximum);
    const outbox = new Outbox(this);
    this.outbox = outbox;
    // MQTT 5: no more of the server's QoS 1 and 2 messages unacknowledged than the device takes (65,535
    // when it says nothing).
    if (this.version === 5) outbox.limitInFlight(packet.properties?.receiveMaximum ?? 0xffff);
    // MQTT 3.1.1 keeps a session without a clean start for as long as the endpoint keeps sessions; MQTT 5
    // for its Session Expiry Interval (none: 0, the session ends with the connection).
    const asked = this.version === 5 ? (packet.properties?.sessionExpiryInterval ?? 0) : packet.clean ? 0 : undefined;
    const { session, present } = this.host.openSession(this, packet.clean !== false, asked);
    this.session = session;
    // Keep-alive: a device silent for one and a half times its interval is gone (0: no keep-alive).
    this.silenceMs = packet.keepalive ? packet.keepalive * 1500 : 0;
    // Its silence counts from its login's end: a login slower than its keep-alive is not its silence.
    this.lastReadAt = performance.now();
    this.socket.setTimeout(this.silenceMs);
    const granted = asked !== undefined && session.expiryMs !== asked * 1000 ? session.expiryMs / 1000 : undefined;
    this.socket.write(
      connackAccepted(this.version, limits, {
        assignedClientId: assigned,
        present,
        expiry: granted,
      }),
    );
    this.host.signedIn(this);
    if (present) this.resume(session);
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) for (const next of waiting) this.onPacket(next);
    if (this.pausedForLogin) {
      this.pausedForLogin = false;
      this.resumeReading();
    }
  }

  private refuse(refusal: ConnectRefusal) {
    // MQTT 3.x has no return code for a malformed CONNECT: the connection closes unanswered.
    if (refusal === 'malformed' && this.version !== 5) return this.destroy();
    this.state = 'closed';
    this.socket.end(connackRefused(this.version, refusal, this.clientMaxPacketBytes));
    // Read again (what comes is dropped): a paused socket would never read the device's end, and stay.
    if (this.pausedForLogin) this.socket.resume?.();
  }

  private publish(packet: IPublishPacket) {
    // MQTT 5 §3.3.1.3: the CONNACK said retained messages are not available (connack.ts).
    if (packet.retain && this.version === 5) return this.destroy(ReasonCode.retainNotSupported);
    // MQTT 3.1.1 [MQTT-3.3.1-2], MQTT 5 [MQTT-3.3.1-2]: a QoS 0 message is never sent again.
    if (packet.qos === 0 && packet.dup) return this.destroy(ReasonCode.malformed);
    let name = packet.topic;
    if (this.aliases) {
      const resolved = this.aliases.resolve(name, packet.properties?.topicAlias);
      if (typeof resolved !== 'string') {
        return this.destroy(resolved.refused === 'invalid' ? ReasonCode.topicAliasInvalid : ReasonCode.protocolError);
      }
      name = resolved;
    }
    // A topic name has a character at least ([MQTT-4.7.3-1]); MQTT 5's empty one names an alias above.
    if (name === '') return this.destroy(ReasonCode.protocolError);
    // The topic it published to last was read whole before (topicOf).
    if (name !== this.lastTopic?.name) {
      const fault = topicNameFault(name);
      if (fault) return this.destroy(fault === 'wildcard' ? ReasonCode.protocolError : ReasonCode.malformed);
    }
    const id = packet.messageId as number;
    const topic = this.topicOf(name);
    const ownTopic = topic !== undefined && topic.clientId === this.clientId;
    if (!ownTopic && packet.qos > 0 && this.version === 5) {
      // MQTT 5 says "not authorized" for a publish outside the device's own topics: in its PUBACK, or
      // its PUBREC, which ends a QoS 2 flow there.
      const cmd = packet.qos === 1 ? 'puback' : 'pubrec';
      this.outbox?.packet(generateFor(5, { cmd, messageId: id, reasonCode: ReasonCode.notAuthorized }));
    } else if (packet.qos === 2) {
      const again = (this.session as Session).receivedQos2(id);
      this.outbox?.packet(confirmation(0x50, id));
      // Sent again before its PUBREL: it was taken the first time.
      if (again) return;
    } else if (packet.qos === 1) {
      this.outbox?.puback(id);
    }
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    if (ownTopic) return this.host.received(this, topic, payload);
    // A device topic of another client id gets no answer (over MQTT 3.x it is dropped, acknowledged as
    // MQTT 3.1.1 asks of a publish a server does not allow); any other topic a 404 on its own `httpAck`.
    if (topic === undefined) this.host.refused(this, name, payload);
  }

  private subscribe(packet: ISubscribePacket) {
    // MQTT 5 §3.8.2.1.2: the CONNACK said subscription identifiers are not available (connack.ts).
    if (this.version === 5 && packet.properties?.subscriptionIdentifier !== undefined) {
      return this.destroy(ReasonCode.subscriptionIdentifiersNotSupported);
    }
    const granted: number[] = [];
    const instructionTopics: string[] = [];
    for (const { topic, qos } of packet.subscriptions) {
      if (!maySubscribe(topic, this.clientId, this.accessKey)) {
        granted.push(this.version === 5 ? refusedFilterCode(topic) : SUBSCRIPTION_FAILURE_V3);
        continue;
      }
      const given = Math.min(qos, 2);
      if (topic === this.ackTopic) {
        (this.session as Session).ackQos = Math.min(given, 1);
      } else if (!(this.session as Session).subscribe(topic, given)) {
        // As many subscriptions as a session holds (sessions.ts, MAX_SUBSCRIPTIONS).
        granted.push(this.version === 5 ? ReasonCode.quotaExceeded : SUBSCRIPTION_FAILURE_V3);
        continue;
      } else if (thingOfTopic(topic) !== undefined) {
        instructionTopics.push(topic);
      }
      granted.push(given);
    }
    this.outbox?.packet(generateFor(this.version, { cmd: 'suback', messageId: packet.messageId as number, granted }));
    // Instructions not yet acknowledged follow the SUBACK (instructions.ts, "subscribed").
    for (const topic of instructionTopics) this.host.subscribed(this, topic);
  }

  /**
   * The device has one of the server's QoS 1 or 2 messages, or refused it (MQTT 5): room for the next,
   * and, when it took it, an instruction delivered. A QoS 2 instruction is delivered by its PUBCOMP
   * (`qos` 2) only: a PUBACK of one is none of its handshake, and leaves it in flight.
   */
  private acknowledged(messageId: number, taken = true, qos?: 1 | 2): void {
    const message = this.session?.inFlight.get(messageId);
    if (qos === 1 && message?.qos === 2) return;
    // An id the server has nothing in flight under makes no room: the device would be sent more than it takes.
    if (message === undefined && !this.outbox?.answerAcknowledged(messageId)) return;
    this.outbox?.acknowledged();
    const alertKey = this.session?.acknowledged(messageId)?.alertKey;
    if (alertKey !== undefined && taken) this.host.delivered(alertKey);
  }

  /** A message the device acknowledges, sent under a packet id its session keeps until it does. */
  private sendKept(message: OutgoingMessage): void {
    const messageId = (this.session as Session).send(message);
    // A session holding as many instructions in flight as it may takes no more: this one stays pending.
    if (messageId === undefined) return;
    const bytes = instructionPacket(message.topic, message.payload, message.qos, messageId, this.version);
    if (this.fits(bytes, messageId)) this.outbox?.publish(bytes);
  }

  /**
   * Whether the device takes a packet this long (MQTT 5's Maximum Packet Size). One it does not is
   * not sent and, as MQTT 5 asks, its flow ends as if it had been: its session lets it go. It is not
   * delivered, so the instruction stays pending.
   */
  private fits(bytes: Buffer, messageId?: number): boolean {
    if (this.clientMaxPacketBytes === undefined || bytes.length <= this.clientMaxPacketBytes) return true;
    if (messageId !== undefined) this.session?.acknowledged(messageId);
    return false;
  }

  /**
   * A resumed session: what was sent and not acknowledged goes again under its packet id (marked as
   * a duplicate; a QoS 2 message the device has received, as its PUBREL), then what was due while the
   * device was away.
   */
  private resume(session: Session): void {
    for (const [messageId, message] of session.inFlight) {
      if (message.released) {
        this.outbox?.releaseAgain(confirmation(0x62, messageId));
        continue;
      }
      const bytes = instructionPacket(message.topic, message.payload, message.qos, messageId, this.version, true);
      if (this.fits(bytes, messageId)) this.outbox?.publish(bytes);
    }
    for (const message of session.takeQueued()) this.sendKept(message);
  }

  /** Whether an MQTT 5 DISCONNECT asks a session that was to end with its connection to outlive it. */
  private raisesExpiryFromZero(expirySeconds: number | undefined): boolean {
    return this.version === 5 && expirySeconds !== undefined && expirySeconds > 0 && this.session?.expiryMs === 0;
  }

  /** MQTT 5's DISCONNECT may change the session's expiry (not from 0: raisesExpiryFromZero). */
  private disconnect(expirySeconds: number | undefined): void {
    const session = this.session;
    if (this.version !== 5 || expirySeconds === undefined || !session) return;
    session.expiryMs = this.host.sessionExpiryMs(expirySeconds);
  }

  /**
   * The socket's timeout: the device's silence has lasted as long as it may (keep-alive), or its
   * CONNECT has not come in time. The socket counts the server's writes as activity too, and an
   * instruction written to a silent device put its timeout off (sendInstruction): once the device
   * has been silent long enough it is gone, else the timeout waits for the rest of its silence.
   */
  private onTimeout(): void {
    if (this.state === 'open' && this.silenceMs > 0) {
      const left = this.silenceMs - (performance.now() - this.lastReadAt);
      if (left >= 1) {
        this.socket.setTimeout(Math.ceil(left));
        return;
      }
    }
    this.destroy(ReasonCode.keepAliveTimeout);
  }

  /**
   * The device topic of a topic name; a device publishes its events to the same one message after
   * message. Only an event topic is kept: an idle device has published its register last, and keeps
   * nothing of it.
   */
  private topicOf(name: string): DeviceTopic | undefined {
    if (this.lastTopic?.name === name) return this.lastTopic.topic;
    const topic = parseDeviceTopic(name);
    if (topic?.kind === 'event') this.lastTopic = { name, topic };
    return topic;
  }

  /**
   * The will of a connection ended without DISCONNECT: taken at once, or, over MQTT 5, after its Will
   * Delay Interval or when its session ends, whichever comes first (the session holds it meanwhile),
   * and not at all when a connection of its client id comes before (MQTT 5 §3.1.2.5): one taking over
   * this connection has come before any delay ends.
   */
  private leaveWill(will: NonNullable<IConnectPacket['will']>): void {
    const delayMs = this.version === 5 ? (will.properties?.willDelayInterval ?? 0) * 1000 : 0;
    if (delayMs > 0 && this.takenOver) return;
    const session = this.session;
    const waitMs = session?.kept ? Math.min(delayMs, session.expiryMs) : 0;
    if (waitMs > 0) session?.leaveWill(waitMs, () => this.publishWill(will));
    else this.publishWill(will);
  }

  private publishWill(will: NonNullable<IConnectPacket['will']>): void {
    const topic = parseDeviceTopic(will.topic);
    if (topic === undefined || topic.clientId !== this.clientId) return;
    const payload = typeof will.payload === 'string' ? Buffer.from(will.payload) : will.payload;
    this.host.received(this, topic, payload);
  }
}

/**
 * The MQTT 5 SUBACK code of a topic filter the device may not subscribe to: a shared subscription's is
 * its own (the CONNACK said none are available), any other's "not authorized".
 */
function refusedFilterCode(filter: string): number {
  return filter.startsWith('$share/') ? ReasonCode.sharedSubscriptionsNotSupported : ReasonCode.notAuthorized;
}

/** PUBACK (0x40), PUBREC (0x50), PUBREL (0x62), PUBCOMP (0x70), UNSUBACK (0xb0) of MQTT 3.1.1, or of MQTT 5 with success. */
function confirmation(first: number, messageId: number): Buffer {
  return Buffer.from([first, 2, messageId >> 8, messageId & 0xff]);
}

/** A packet as mqtt-packet writes it for the connection's protocol version. */
function generateFor(version: number, packet: Packet): Buffer {
  return generate(packet, { protocolVersion: version });
}
