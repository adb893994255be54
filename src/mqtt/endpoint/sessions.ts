/**
 * The device endpoint's sessions (docs/devices.md, "The device endpoint"): what MQTT keeps for a client id between
 * its connections when it asks for it (MQTT 3.1.1 `clean: false`; MQTT 5 a Session Expiry Interval):
 * its subscriptions, the messages sent to it at QoS 1 and 2 not yet acknowledged, those due while it
 * was away, and the packet ids of its QoS 2 messages not yet released. A clean session lives as long
 * as its connection.
 *
 * Memory is bounded: at most `maxKept` sessions without a connection (the one gone longest is dropped
 * first), each holding at most `maxMessages` messages (answers are dropped before instructions, and an
 * instruction in flight never: the device may have it), each kept at most `maxExpiryMs`, with at most
 * one will waiting (MQTT 5's Will Delay Interval). A dropped instruction is still pending in the store:
 * it is sent again when its device subscribes again, as for a clean session.
 */
import { nextPacketId, type PacketIds } from './ack-packets.ts';

/** A message to a device that it acknowledges: an instruction (QoS 1 or 2) or an answer on `httpAck` (QoS 1). */
export interface OutgoingMessage {
  topic: string;
  payload: string;
  qos: 1 | 2;
  /** The instruction's alert key; answers have none. */
  alertKey?: string;
  /** QoS 2: the device has sent PUBREC, the server PUBREL; PUBCOMP is awaited. */
  released?: boolean;
}

export interface SessionLimits {
  /** Sessions kept without a connection. */
  maxKept: number;
  /** Messages a session holds, in flight and queued together. */
  maxMessages: number;
  /** The longest a session is kept after its connection closes, ms (at most 2^31 - 1). */
  maxExpiryMs: number;
}

const NO_FILTERS: ReadonlyMap<string, number> = new Map();
const NOTHING_IN_FLIGHT: ReadonlyMap<number, OutgoingMessage> = new Map();
const NOTHING_QUEUED: readonly OutgoingMessage[] = Object.freeze([]);

/**
 * Instruction subscriptions a session may hold: each is kept for as long as the session, in memory,
 * and compared with every instruction to the device.
 */
export const MAX_SUBSCRIPTIONS = 1000;

/**
 * One client id's session. Every connection has one, so its tables are made only once used: most
 * devices never hold a QoS 2 message or an instruction, and an idle connection should cost little.
 */
export class Session {
  /** How long it is kept once its connection closes, ms (0: it ends with the connection). */
  expiryMs = 0;
  /** The QoS of its `httpAck` subscription, -1 without one. */
  ackQos = -1;
  /** Packet ids of the messages it sends, shared by its answers and its instructions. */
  readonly ids: PacketIds = { _nextId: 1, taken: undefined };
  /** Its connection, while it has one. */
  holder: object | undefined;
  timer: NodeJS.Timeout | undefined;
  private filterTable: Map<string, number> | undefined;
  private flight: Map<number, OutgoingMessage> | undefined;
  private waiting: OutgoingMessage[] | undefined;
  private received: Set<number> | undefined;
  /** The will of its connection gone, waiting for its delay (leaveWill). */
  private will: { timer: NodeJS.Timeout; publish: () => void } | undefined;

  constructor(
    readonly clientId: string,
    readonly accessKey: string,
    private readonly maxMessages: number,
  ) {}

  /** Its instruction subscriptions: topic filter, granted QoS. */
  get filters(): ReadonlyMap<string, number> {
    return this.filterTable ?? NO_FILTERS;
  }

  /** Messages sent and not yet acknowledged, by packet id, in the order sent. */
  get inFlight(): ReadonlyMap<number, OutgoingMessage> {
    return this.flight ?? NOTHING_IN_FLIGHT;
  }

  /** Messages due while it had no connection, in order. */
  get queued(): readonly OutgoingMessage[] {
    return this.waiting ?? NOTHING_QUEUED;
  }

  /**
   * Adds an instruction subscription, or changes its QoS; answers false, adding none, when it holds
   * MAX_SUBSCRIPTIONS already (a gateway with more things subscribes to `.../thing/+/executeInstruction`).
   */
  subscribe(filter: string, qos: number): boolean {
    this.filterTable ??= new Map();
    if (this.filterTable.size >= MAX_SUBSCRIPTIONS && !this.filterTable.has(filter)) return false;
    this.filterTable.set(filter, qos);
    return true;
  }

  unsubscribe(filter: string): void {
    this.filterTable?.delete(filter);
  }

  /** A QoS 2 message received from the device: whether it had been received before and not yet released. */
  receivedQos2(id: number): boolean {
    this.received ??= new Set();
    if (this.received.has(id)) return true;
    this.received.add(id);
    return false;
  }

  /** PUBREL of a QoS 2 message received from the device: whether it was one received and not yet released. */
  releasedQos2(id: number): boolean {
    return this.received?.delete(id) ?? false;
  }

  /** Whether it outlives its connection. */
  get kept(): boolean {
    return this.expiryMs > 0;
  }

  /** The QoS granted to a subscription of its that covers `topic`, or -1. */
  instructionQos(topic: string): number {
    let qos = -1;
    for (const [filter, granted] of this.filters) if (covers(filter, topic)) qos = Math.max(qos, granted);
    return qos;
  }

  /** Whether it already holds the instruction of this alert key (in flight or queued). */
  holds(alertKey: string): boolean {
    for (const message of this.inFlight.values()) if (message.alertKey === alertKey) return true;
    return this.queued.some((message) => message.alertKey === alertKey);
  }

  /**
   * A message being sent: the packet id it takes, kept until the device acknowledges it. An instruction
   * takes none (undefined: it is not sent, and stays pending in the store) while the session holds
   * `maxMessages` instructions in flight, which are never dropped.
   */
  send(message: OutgoingMessage): number | undefined {
    if (message.alertKey !== undefined && this.instructionsInFlight() >= this.maxMessages) return undefined;
    if (!this.flight) {
      this.flight = new Map();
      this.ids.taken = this.flight;
    }
    const id = nextPacketId(this.ids);
    this.flight.set(id, message);
    this.trim();
    return id;
  }

  /** A message due while it has no connection, sent when one resumes it. */
  queue(message: OutgoingMessage): void {
    this.waiting ??= [];
    this.waiting.push(message);
    this.trim();
  }

  /** PUBACK or PUBCOMP of `id`: the message it acknowledges, now forgotten. */
  acknowledged(id: number): OutgoingMessage | undefined {
    const message = this.flight?.get(id);
    if (message) this.flight?.delete(id);
    return message;
  }

  /** PUBREC of `id`: whether it is one of its QoS 2 messages, now waiting for PUBCOMP. */
  release(id: number): boolean {
    const message = this.flight?.get(id);
    if (!message) return false;
    message.released = true;
    return true;
  }

  /** Takes the queued messages, to be sent. */
  takeQueued(): readonly OutgoingMessage[] {
    const queued = this.queued;
    this.waiting = undefined;
    return queued;
  }

  /**
   * A will due in `ms` (MQTT 5's Will Delay Interval, within the session's expiry), or when the session
   * ends if sooner (willDue); dropped when a connection of its client id comes first (dropWill).
   */
  leaveWill(ms: number, publish: () => void): void {
    this.dropWill();
    const timer = setTimeout(() => this.willDue(), ms);
    timer.unref();
    this.will = { timer, publish };
  }

  dropWill(): void {
    clearTimeout(this.will?.timer);
    this.will = undefined;
  }

  /** The will waiting goes now: its delay has passed, or the session ends. */
  willDue(): void {
    const will = this.will;
    this.dropWill();
    will?.publish();
  }

  private instructionsInFlight(): number {
    let count = 0;
    for (const message of this.inFlight.values()) if (message.alertKey !== undefined) count++;
    return count;
  }

  /**
   * Keeps within maxMessages: the oldest answer goes first (queued, then in flight), then the oldest
   * queued instruction. An instruction in flight stays: the device may have it, and its handshake
   * (PUBCOMP after the PUBREL) must find it, or a delivered instruction would stay pending and be sent
   * again. Those are at most maxMessages (send).
   */
  private trim(): void {
    let over = this.inFlight.size + this.queued.length - this.maxMessages;
    if (over <= 0) return;
    const isAnswer = (message: OutgoingMessage) => message.alertKey === undefined;
    over -= dropOldest(this.waiting, isAnswer, over);
    if (over > 0 && this.flight) {
      for (const [id, message] of this.flight) {
        if (over === 0) break;
        if (isAnswer(message)) {
          this.flight.delete(id);
          over--;
        }
      }
    }
    if (over > 0) dropOldest(this.waiting, () => true, over);
  }
}

/** Removes the `count` oldest messages of `list` that `which` picks; answers how many it removed. */
function dropOldest(
  list: OutgoingMessage[] | undefined,
  which: (message: OutgoingMessage) => boolean,
  count: number,
): number {
  if (!list) return 0;
  let removed = 0;
  for (let i = 0; i < list.length && removed < count; ) {
    if (which(list[i] as OutgoingMessage)) {
      list.splice(i, 1);
      removed++;
    } else {
      i++;
    }
  }
  return removed;
}

/**
 * Values by key pair, then client id. A client id is a device's within its key pair: a device of
 * another key pair (of another organisation, maybe) with the same client id neither takes over its
 * connection nor ends its session. The access key strings are shared by a key pair's connections.
 */
export class ClientTable<T> {
  private readonly byAccessKey = new Map<string, Map<string, T>>();

  get(accessKey: string, clientId: string): T | undefined {
    return this.byAccessKey.get(accessKey)?.get(clientId);
  }

  set(accessKey: string, clientId: string, value: T): void {
    let clients = this.byAccessKey.get(accessKey);
    if (!clients) {
      clients = new Map();
      this.byAccessKey.set(accessKey, clients);
    }
    clients.set(clientId, value);
  }

  /** Forgets the value of the client id when it is `value`. */
  delete(accessKey: string, clientId: string, value: T): void {
    const clients = this.byAccessKey.get(accessKey);
    if (clients?.get(clientId) !== value) return;
    clients.delete(clientId);
    if (clients.size === 0) this.byAccessKey.delete(accessKey);
  }
}

export class SessionStore {
  /** Every session a connection may resume, or that has a connection, by key pair and client id. */
  private readonly byClient = new ClientTable<Session>();
  /** Sessions without a connection, the one gone longest first. */
  private readonly detached = new Set<Session>();

  constructor(private readonly limits: SessionLimits) {}

  /** Sessions kept without a connection. */
  get keptCount(): number {
    return this.detached.size;
  }

  /** Sessions without a connection (instructions due are queued on them). */
  offline(): Iterable<Session> {
    return this.detached;
  }

  /** The expiry a session is given for what the client asked (seconds; undefined: as long as allowed). */
  expiryFor(askedSeconds: number | undefined): number {
    if (askedSeconds === undefined) return this.limits.maxExpiryMs;
    return Math.min(askedSeconds * 1000, this.limits.maxExpiryMs);
  }

  /** `open` for a connection signing in, kept for the expiry it asked (`expiryFor`). */
  openFor(
    connection: { readonly clientId: string; readonly accessKey: string },
    cleanStart: boolean,
    expirySeconds: number | undefined,
  ): { session: Session; present: boolean } {
    return this.open(connection, connection.clientId, connection.accessKey, cleanStart, this.expiryFor(expirySeconds));
  }

  /**
   * A connection of `clientId` has signed in: the session it resumes (`present`) or a new one. A clean
   * start ends the session before. Sessions are the key pair's (ClientTable): one of another key pair
   * with the same client id is neither resumed nor ended.
   */
  open(
    holder: object,
    clientId: string,
    accessKey: string,
    cleanStart: boolean,
    expiryMs: number,
  ): { session: Session; present: boolean } {
    const before = this.byClient.get(accessKey, clientId);
    // A connection of its client id has come: the will its last connection left is not sent.
    before?.dropWill();
    if (before) this.end(before);
    const present = before !== undefined && !cleanStart;
    const session = present ? before : new Session(clientId, accessKey, this.limits.maxMessages);
    session.expiryMs = Math.min(expiryMs, this.limits.maxExpiryMs);
    session.holder = holder;
    this.byClient.set(accessKey, clientId, session);
    return { session, present };
  }

  /** Its connection has closed: the session is kept for its expiry, or ends. */
  detach(session: Session, holder: object): void {
    if (session.holder !== holder) return;
    session.holder = undefined;
    if (this.byClient.get(session.accessKey, session.clientId) !== session) return;
    if (!session.kept) return void this.byClient.delete(session.accessKey, session.clientId, session);
    this.detached.add(session);
    session.timer = setTimeout(() => this.end(session), session.expiryMs);
    session.timer.unref();
    if (this.detached.size > this.limits.maxKept) {
      const oldest = this.detached.values().next().value as Session;
      this.end(oldest);
    }
  }

  /** Ends a session: it is no longer resumed, and the will it held goes now. */
  private end(session: Session): void {
    session.willDue();
    clearTimeout(session.timer);
    session.timer = undefined;
    this.detached.delete(session);
    this.byClient.delete(session.accessKey, session.clientId, session);
  }
}

/** Whether a subscription's filter covers a topic (the only wildcard a device may use is a `+` level). */
export function covers(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  return f.length === t.length && f.every((part, i) => part === '+' || part === t[i]);
}
