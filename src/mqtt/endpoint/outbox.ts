/**
 * What the device endpoint writes to one connection, gathered so that a message's PUBACK and its
 * `httpAck` answer leave in one write (docs/devices.md, "MQTT"). A PUBACK is held until its message
 * is answered, for at most PUBACK_HOLD_MS: a store that commits within that time costs one write per
 * message instead of two, and a slow one still gets the PUBACK to the device on time. Answers due on a
 * turn of the event loop leave together on the next, after every PUBACK held on the connection, in one
 * write: the packets of many messages cost one system call.
 */
import type { Ack } from '../signed-messages.ts';
import { ackPacketBytes, ackPackets, nextPacketId, type PacketIds, pubackPackets } from './ack-packets.ts';

/** How long a PUBACK waits for its message's answer to leave with it, ms. */
export const PUBACK_HOLD_MS = 20;

/** The socket as the outbox needs it. */
export interface OutboxSocket {
  readonly writable: boolean;
  write(bytes: Buffer): unknown;
}

/** Where the outbox writes, and how: the connection's protocol version and its ack subscription. */
export interface OutboxTarget {
  socket: OutboxSocket;
  /** 3 and 4 (MQTT 3.1, 3.1.1) share their packets; 5 writes MQTT 5's. */
  version: number;
  /** The connection's packet ids, which its QoS 1 answers and its instructions take in turn. */
  ids: PacketIds;
  /** The device's `httpAck` topic. */
  ackTopic: string;
  /** The QoS of its subscription to that topic, or -1 while it has none (answers are then dropped). */
  ackQos: number;
  /**
   * The longest packet the device takes (MQTT 5's Maximum Packet Size in its CONNECT), when it set one:
   * an answer longer is dropped as if it had been sent, as MQTT 5 asks.
   */
  readonly clientMaxPacketBytes?: number | undefined;
  /** Whether QoS 1 answers are kept until the device acknowledges them (a session that outlives its connection). */
  readonly tracksAnswers?: boolean;
  /** A kept answer's packet id, taken from the session, which keeps the answer until it is acknowledged. */
  track?(payload: string): number;
}

/** A target that keeps its QoS 1 answers (`tracksAnswers`, with `track`). */
type Tracker = OutboxTarget & { track(payload: string): number };

/** Flushes outboxes: the held PUBACKs past their time, and the answers of each turn. */
class Flusher {
  private readonly due = new Set<Outbox>();
  private readonly holding = new Set<Outbox>();
  private timer: NodeJS.Timeout | undefined;
  private scheduled = false;

  /** An outbox has answers (or other packets) to send on the next turn. */
  markDue(outbox: Outbox): void {
    this.due.add(outbox);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flushDue);
  }

  /** An outbox holds PUBACKs: they leave within PUBACK_HOLD_MS, with or without their answers. */
  markHolding(outbox: Outbox): void {
    this.holding.add(outbox);
    this.timer ??= setTimeout(this.flushHeld, PUBACK_HOLD_MS);
  }

  forget(outbox: Outbox): void {
    this.due.delete(outbox);
    this.holding.delete(outbox);
  }

  private readonly flushDue = () => {
    this.scheduled = false;
    for (const outbox of this.due) {
      this.holding.delete(outbox);
      outbox.flush();
    }
    this.due.clear();
  };

  private readonly flushHeld = () => {
    this.timer = undefined;
    const holding = [...this.holding];
    this.holding.clear();
    for (const outbox of holding) outbox.flush();
  };
}

const flusher = new Flusher();

export class Outbox {
  /** Packet ids of QoS 1 messages whose PUBACK is held. */
  private pubacks: number[] | undefined;
  /** Packets due that are neither PUBACKs nor answers (MQTT 5 PUBACKs with a reason code). */
  private packets: Buffer[] | undefined;
  private acks: Ack[] | undefined;
  /**
   * The QoS 1 and 2 messages the device may have unacknowledged (MQTT 5's Receive Maximum in its
   * CONNECT; unbounded for MQTT 3.x), those sent and not acknowledged, and the messages (instructions,
   * sent again) that wait for room; answers wait in `acks`.
   */
  private quota = Number.POSITIVE_INFINITY;
  private unacknowledged = 0;
  /**
   * Packet ids of QoS 1 answers sent and not yet acknowledged, counted against the Receive Maximum,
   * for a session that keeps none (a kept session's are in its messages in flight). At most `quota`.
   */
  private answerIds: Set<number> | undefined;
  private waitingPublishes: Buffer[] | undefined;

  constructor(private readonly target: OutboxTarget) {}

  /** The device takes at most `max` QoS 1 and 2 messages unacknowledged (MQTT 5's Receive Maximum). */
  limitInFlight(max: number): void {
    this.quota = max;
  }

  /** Whether the device set a Receive Maximum (MQTT 5): only then are its messages in flight counted. */
  private get limited(): boolean {
    return this.quota !== Number.POSITIVE_INFINITY;
  }

  /** Messages waiting for the device to acknowledge others before they may be sent. */
  get waiting(): number {
    if (!this.limited) return 0;
    return (this.waitingPublishes?.length ?? 0) + (this.target.ackQos > 0 ? (this.acks?.length ?? 0) : 0);
  }

  /**
   * A QoS 1 or 2 message (an instruction, or one sent again): written on the next turn when the
   * device's Receive Maximum leaves room, else once it has acknowledged enough of those before it.
   */
  publish(bytes: Buffer): void {
    if (this.unacknowledged < this.quota) this.sendCounted(bytes);
    else if (this.waitingPublishes) this.waitingPublishes.push(bytes);
    else this.waitingPublishes = [bytes];
  }

  /** The PUBREL of a QoS 2 message released before: in flight until its PUBCOMP, whatever the room. */
  releaseAgain(bytes: Buffer): void {
    this.sendCounted(bytes);
  }

  /**
   * Whether `messageId` is that of an answer in flight, counted and not kept by the session: it is
   * acknowledged now. An id the server has nothing in flight under frees no room.
   */
  answerAcknowledged(messageId: number): boolean {
    return this.answerIds?.delete(messageId) === true;
  }

  /** The device acknowledged a QoS 1 or 2 message (PUBACK, PUBCOMP, or a PUBREC refusing it): room for the next. */
  acknowledged(): void {
    if (!this.limited) return;
    this.unacknowledged = Math.max(0, this.unacknowledged - 1);
    const next = this.waitingPublishes?.shift();
    if (next) this.sendCounted(next);
    else if (this.acks) flusher.markDue(this);
  }

  /** A packet in flight until the device acknowledges it, counted against its Receive Maximum. */
  private sendCounted(bytes: Buffer): void {
    if (this.limited) this.unacknowledged++;
    this.packet(bytes);
  }

  /** Holds the PUBACK of a QoS 1 message, to leave with its answer or within PUBACK_HOLD_MS. */
  puback(messageId: number): void {
    if (this.pubacks) this.pubacks.push(messageId);
    else this.pubacks = [messageId];
    flusher.markHolding(this);
  }

  /** A packet to write on the next turn, in order with the PUBACKs and before the answers. */
  packet(bytes: Buffer): void {
    this.flushPubacksInto();
    if (this.packets) this.packets.push(bytes);
    else this.packets = [bytes];
    flusher.markDue(this);
  }

  /** An answer on `httpAck`: it leaves on the next turn with whatever else is due. */
  ack(ack: Ack): void {
    if (this.acks) this.acks.push(ack);
    else this.acks = [ack];
    flusher.markDue(this);
  }

  /** Writes everything due now, in one write. */
  flush(): void {
    // Packets made due went after the PUBACKs held before them (flushPubacksInto): those held now are later.
    const parts = this.packets ?? [];
    if (this.pubacks) parts.push(pubackPackets(this.pubacks));
    const max = this.target.clientMaxPacketBytes;
    if (this.acks && max !== undefined) this.acks = this.fitting(this.acks, max);
    let acks = this.acks;
    this.pubacks = undefined;
    this.packets = undefined;
    this.acks = undefined;
    const { socket, ackQos } = this.target;
    if (acks && ackQos > 0 && this.unacknowledged + acks.length > this.quota) {
      // Those past the device's Receive Maximum wait for its acknowledgements.
      const room = Math.max(0, this.quota - this.unacknowledged);
      this.acks = acks.slice(room);
      acks = room > 0 ? acks.slice(0, room) : undefined;
    }
    if (acks && ackQos > 0 && this.limited) this.unacknowledged += acks.length;
    if (acks && ackQos >= 0) parts.push(this.ackBytes(acks, ackQos > 0 ? 1 : 0));
    if (parts.length === 0 || !socket.writable) return;
    socket.write(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));
  }

  /** Nothing more is written: the connection has closed. Answers the answers not yet written. */
  discard(): Ack[] | undefined {
    const acks = this.acks;
    // Instructions waiting are kept by the session, which sends them again when it is resumed.
    this.waitingPublishes = undefined;
    this.pubacks = undefined;
    this.packets = undefined;
    this.acks = undefined;
    flusher.forget(this);
    return acks;
  }

  /** The answers whose packets are at most `max` bytes long (clientMaxPacketBytes); undefined for none. */
  private fitting(acks: Ack[], max: number): Ack[] | undefined {
    const { ackTopic, ackQos, version } = this.target;
    const qos = ackQos > 0 ? 1 : 0;
    const fit = acks.filter((ack) => ackPacketBytes(ackTopic, ack, qos, version) <= max);
    return fit.length > 0 ? fit : undefined;
  }

  /** Held PUBACKs go before a packet made due after them, keeping the order the device sent in. */
  private flushPubacksInto(): void {
    if (!this.pubacks) return;
    const bytes = pubackPackets(this.pubacks);
    this.pubacks = undefined;
    if (this.packets) this.packets.push(bytes);
    else this.packets = [bytes];
  }

  private ackBytes(acks: readonly Ack[], qos: 0 | 1): Buffer {
    const target = this.target;
    const tracked = qos === 1 && target.tracksAnswers === true && target.track !== undefined;
    let tracker: { track(payload: string): number } | undefined = tracked ? (target as Tracker) : undefined;
    if (qos === 1 && !tracked && this.limited) tracker = this.answerTracker;
    return ackPackets(target.ids, target.ackTopic, acks, qos, target.version, tracker);
  }

  /** Gives a counted answer its packet id and remembers it until the device acknowledges it. */
  private readonly answerTracker = {
    track: (): number => {
      const id = nextPacketId(this.target.ids);
      this.answerIds ??= new Set();
      this.answerIds.add(id);
      return id;
    },
  };
}
