/**
 * What the server thread (embedded-broker.ts) and the broker thread (broker-worker.ts) say to each
 * other. Device messages and acknowledgements, thousands a second, travel as flat lists, one list per
 * turn of the event loop: copying one array of strings and numbers between threads costs far less
 * than copying an object per item. The order of their items is written here only.
 */
import type { ErrorItem } from '../core/errors.ts';
import type { TlsMaterial } from '../core/tls.ts';
import type { InboundLimits } from './inbound-flow.ts';
import type { Ack } from './signed-messages.ts';
import type { DeviceMessageKind } from './topics.ts';

export interface BrokerSettings {
  /** The plain MQTT listener's port (0: any free one), or null for none. */
  port: number | null;
  /** The MQTTS listener's port and its certificate, or null for none. */
  secure: { port: number; tls: TlsMaterial } | null;
  host: string;
  /** Connections are numbered from here: a thread started after a failed one never reuses a number. */
  firstConnectionId: number;
  /** Device connections beyond this are refused with CONNACK 3. */
  maxConnections: number;
  /** The process's count of clients' sockets, shared with the server thread (core/sockets.ts). */
  sockets: { budget: number; memory: SharedArrayBuffer };
  /** How long a new connection has to send CONNECT, ms. */
  connectTimeoutMs: number;
  /** How many device messages may wait for the server thread (inbound-flow.ts). */
  inbound: InboundLimits;
  /** Bytes of unfinished packets held, all connections together (packet-parser.ts, PartialPackets). */
  maxPartialBytes: number;
}

/** Checked device messages: connection, access key, kind, text, context; five items each. */
export type MessageList = (number | string)[];
const MESSAGE_ITEMS = 5;

/** Logins to check: login id, access key; two items each. */
export type LoginList = (number | string)[];

/** Answers to logins: login id, the key pair's secret or null; two items each. */
export type LoginAnswerList = (number | string | null)[];

/** Acknowledgements: connection, context, HTTP code, the errors or null, retry_after or null; five items each. */
export type AckList = (number | string | ErrorItem[] | null)[];

/** What the server thread sends. */
export type ToBroker =
  | { t: 'logins'; answers: LoginAnswerList }
  | { t: 'acks'; acks: AckList }
  /**
   * The connection's key pair is gone: the connection is closed, once the acknowledgements due to it
   * (the last says why) are written.
   */
  | { t: 'close'; connection: number }
  /** The store is behind (the event writer holds most of what it may): device messages are answered 503 at once. */
  | { t: 'behind'; behind: boolean }
  /** Asks how many messages wait for the server thread now, and the most that ever did. */
  | { t: 'figures'; id: number }
  | { t: 'publish'; id: number; topic: string; payload: string; alertKey: string; connection: number | null }
  /** A new certificate for the MQTTS listener's next connections (connections open keep theirs). */
  | { t: 'tls'; tls: TlsMaterial }
  | { t: 'stop' };

/** The listeners of a broker thread: MQTT_PORT's and MQTTS_PORT's. */
export type BrokerListener = 'MQTT_PORT' | 'MQTTS_PORT';

/** What the broker thread sends. */
export type FromBroker =
  | { t: 'listening'; port: number | null; securePort: number | null }
  | { t: 'failed'; listener: BrokerListener; code: string | undefined; message: string }
  | { t: 'logins'; logins: LoginList }
  | { t: 'messages'; messages: MessageList }
  | { t: 'subscribed'; accessKey: string; topic: string; connection: number }
  | { t: 'published'; id: number }
  | { t: 'delivered'; alertKey: string }
  | { t: 'figures'; id: number; pending: number; highWater: number; connections: number }
  | { t: 'log'; level: 'error' | 'warn'; message: string; error: string | undefined };

export function addMessage(
  list: MessageList,
  connection: number,
  accessKey: string,
  kind: DeviceMessageKind,
  text: string,
  context: string,
): void {
  list.push(connection, accessKey, kind, text, context);
}

/** Visits the message that starts at item `at` of the list; answers where the next one starts. */
export function visitMessage(
  list: MessageList,
  at: number,
  visit: (connection: number, accessKey: string, kind: DeviceMessageKind, text: string, context: string) => void,
): number {
  visit(
    list[at] as number,
    list[at + 1] as string,
    list[at + 2] as DeviceMessageKind,
    list[at + 3] as string,
    list[at + 4] as string,
  );
  return at + MESSAGE_ITEMS;
}

export function addAck(list: AckList, connection: number, ack: Ack): void {
  list.push(connection, ack.context, ack.http_code, ack.http_msg.errors ?? null, ack.http_msg.retry_after ?? null);
}

export function forEachAck(list: AckList, visit: (connection: number, ack: Ack) => void): void {
  for (let i = 0; i < list.length; i += 5) {
    const errors = list[i + 3] as ErrorItem[] | null;
    const retryAfter = list[i + 4] as number | null;
    visit(list[i] as number, {
      context: list[i + 1] as string,
      http_code: list[i + 2] as number,
      http_msg: errors ? (retryAfter === null ? { errors } : { errors, retry_after: retryAfter }) : {},
    });
  }
}

export function addLogin(list: LoginList, id: number, accessKey: string): void {
  list.push(id, accessKey);
}

export function forEachLogin(list: LoginList, visit: (id: number, accessKey: string) => void): void {
  for (let i = 0; i < list.length; i += 2) visit(list[i] as number, list[i + 1] as string);
}

export function addLoginAnswer(list: LoginAnswerList, id: number, secretKey: string | null): void {
  list.push(id, secretKey);
}

export function forEachLoginAnswer(list: LoginAnswerList, visit: (id: number, secretKey: string | null) => void): void {
  for (let i = 0; i < list.length; i += 2) visit(list[i] as number, list[i + 1] as string | null);
}

/**
 * A list that leaves for the other thread once per turn of the event loop, with whatever was added to
 * it meanwhile: one message per turn instead of one per item.
 */
export class TurnList<T> {
  private items: T[] = [];

  constructor(private readonly send: (items: T[]) => void) {}

  /** The list to add to now. */
  open(): T[] {
    if (this.items.length === 0) setImmediate(this.flush);
    return this.items;
  }

  private readonly flush = () => {
    const items = this.items;
    this.items = [];
    this.send(items);
  };
}
