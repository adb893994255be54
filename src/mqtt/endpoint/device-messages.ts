/**
 * The device endpoint's messages, from a device topic's payload to its `httpAck` answer
 * (docs/devices.md, "MQTT"): read and checked against the connection's key pair (signed-messages.ts),
 * done by the device service as the same body over HTTP (messages.ts), and answered once durable.
 * This runs on the server thread, where the event writer's commits land: no message or answer crosses
 * between threads.
 *
 * Overload (docs/devices.md, "Overload"): messages taken and not yet answered are bounded by
 * InboundFlow; past its limits, while the store is behind or while the server stops, a message is
 * answered 503 at once, without being read where its context can be told from its end.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { DeviceAuthenticator, DeviceCredentials } from '../../devices/authentication.ts';
import type { DeviceService } from '../../devices/service.ts';
import { storeFaultOf } from '../../store/faults.ts';
import type { InboundFlow } from '../inbound-flow.ts';
import { actOnDeviceMessage, failureAck, unexpected } from '../messages.ts';
import { type Ack, contextUnread, failure, isAck, readDeviceMessage, refusalOnConnection } from '../signed-messages.ts';
import type { DeviceMessageKind, DeviceTopic } from '../topics.ts';
import type { AnswerOrder } from './answer-order.ts';

/** MQTT 5's DISCONNECT reason for a connection whose key pair is gone: not authorized. */
const NOT_AUTHORIZED = 0x87;

/** A signed-in connection as its messages need it. */
export interface MessageSource {
  /** The endpoint's number of the connection. */
  readonly id: number;
  readonly accessKey: string;
  readonly secretKey: string;
  /** Sends an answer on the connection's `httpAck` (nothing once it has closed). */
  answer(ack: Ack): void;
  /**
   * Closes the connection once its answers due are written; an MQTT 5 device is told why
   * (`reasonCode`, a DISCONNECT's reason code).
   */
  close(reasonCode?: number): void;
  /** Reads no more of its messages after those read now, until `releaseReading` (when its socket can pause). */
  holdReading(): void;
  releaseReading(): void;
  /** Whether its reads are held (holdReading, not released since). */
  readonly readingHeld: boolean;
  /** Its messages' answers, let out in the order the messages were read. */
  readonly answerOrder: AnswerOrder;
}

/** A connection, as fair shares of a busy writer tell sources apart (events/fair-share.ts). */
const mqttSource = (source: MessageSource) => `mqtt:${source.id}`;

/**
 * How long a connection refused for overload with no message waiting is not read, ms: about the time
 * the writer takes to commit a few transactions under a flood.
 */
const HOLD_MS = 200;

/**
 * Messages of a connection being done (not yet answered) past which no more of its are read until
 * half of them are answered: the rest wait in TCP's buffers, and the server decodes no more of a
 * flooding device's messages than the event writer is about to take.
 */
const READ_AHEAD = 16;

/**
 * Held connections read again on one turn of the event loop, at most. A connection read again reads
 * what TCP holds of it at once, up to 64 KiB (under a flood, about eighteen bulks of 50 events, all
 * decoded on that turn), and its messages wait in TCP again only once it is held; sixty released on
 * one turn made the other devices' messages wait a quarter of a second behind them. The rest are
 * read again on the next turns, after the devices whose messages arrived meanwhile.
 */
const RELEASES_PER_TURN = 4;

const busy = (context: string, message = 'the server is busy; send again shortly') =>
  failure(context, 503, [{ code: 'unavailable', message }]);

/**
 * The answer to a message that failed: its own context, and the refusal of docs/operations.md ("When
 * the database fails"): 503 with a message naming a full disk, a read-only or an unanswering database,
 * so that the device sends it again later; 500 for anything else (the same answers as the embedded
 * broker's and the external broker's).
 */
export const storeFailure = (context: string, error: unknown): Ack => failureAck(context, error);

export class DeviceMessages {
  /** Set while the event writer holds most of what it may (events/writer.ts): messages are answered 503. */
  storeBehind = false;
  /** Set once the server stops: messages are answered 503, those under way are let finish. */
  stopping = false;
  /** Connections held (refuse) with no message waiting for its answer: released together after HOLD_MS. */
  private readonly idleHeld = new Set<MessageSource>();
  private idleTimer: NodeJS.Timeout | undefined;
  /** Held connections due to be read again, RELEASES_PER_TURN at a time (releaseSoon). */
  private readonly releasing = new Set<MessageSource>();
  private releaseTurn: NodeJS.Immediate | undefined;
  /** Key pair lookups under way, by connection: its next messages wait for them, to keep their order. */
  private readonly lookups = new Map<number, Promise<unknown>>();

  constructor(
    private readonly devices: DeviceService,
    private readonly authenticator: DeviceAuthenticator,
    private readonly inbound: InboundFlow,
    private readonly log: FastifyBaseLogger,
    /** Why the event writer would refuse an event of an organisation's source now (EventWriter.refusal). */
    private readonly eventRefusal?: (organisationKey: string, source: string) => string | undefined,
    /** Told the seconds from reading each message taken to its answer. */
    private readonly onAnswered?: (seconds: number) => void,
  ) {}

  /** A message a device published to its own device topic. */
  receive(source: MessageSource, topic: DeviceTopic, payload: Buffer) {
    const number = source.answerOrder.next();
    // The writer's own refusal names whose share is taken.
    const shareTaken = topic.kind === 'event' ? this.writerRefusal(source) : undefined;
    const refusing =
      (this.storeBehind && this.inbound.refusedWhileBehind(source.id)) || this.stopping || shareTaken !== undefined;
    // Refused for overload: answered as fast as it is read, without decoding the payload where the
    // context can be told from its end.
    if (refusing || !this.inbound.mayHandOn(source.id, payload.length)) {
      const context = contextUnread(topic, payload);
      if (context !== undefined) return this.refuse(source, number, busy(context, shareTaken));
    }
    const read = readDeviceMessage(topic, payload);
    if (isAck(read)) return this.send(source, number, read);
    if (refusing || !this.inbound.handOn(source.id, read.text.length)) {
      return this.refuse(source, number, busy(read.context, shareTaken));
    }
    const refused = refusalOnConnection(read, source);
    if (refused) {
      this.inbound.answered(source.id);
      return this.send(source, number, refused);
    }
    if (this.inbound.pending(source.id) >= READ_AHEAD) this.hold(source);
    this.begin(source, number, topic.kind, read.text, read.context, performance.now());
  }

  /**
   * Why the event writer would refuse an event of the connection now (its organisation or the
   * connection holds its share of a busy writer, events/fair-share.ts), or undefined. Known without a
   * lookup once the key pair is in the authenticator's memory; otherwise the writer decides later.
   */
  private writerRefusal(source: MessageSource): string | undefined {
    const credentials = this.eventRefusal && this.authenticator.recentCredentials(source.accessKey);
    return credentials ? this.eventRefusal?.(credentials.principal.organisationKey, mqttSource(source)) : undefined;
  }

  /**
   * Each message is done in the name of its key pair as it is now (kept for up to a second by the
   * authenticator): a key pair deleted since the device signed in ends its connection, after the
   * message is answered 401. A lookup that fails for a store fault (the database hangs or is down)
   * refuses the messages that waited behind it with that fault at once, rather than each looking up
   * in turn and waiting out its bound: the chain passes the fault down.
   */
  private begin(
    source: MessageSource,
    number: number,
    kind: DeviceMessageKind,
    text: string,
    context: string,
    read: number,
  ) {
    const pending = this.lookups.get(source.id);
    const recent = pending ? undefined : this.authenticator.recentCredentials(source.accessKey);
    if (recent) return this.act(source, number, kind, text, context, recent, read);
    const looked: Promise<unknown> = (pending ?? Promise.resolve(undefined))
      .then((fault) => (fault === undefined ? this.authenticator.credentials(source.accessKey) : Promise.reject(fault)))
      .then(
        (credentials) => {
          this.act(source, number, kind, text, context, credentials, read);
          return undefined;
        },
        (error: unknown) => {
          this.answer(source, number, storeFailure(context, error), read, error);
          return storeFaultOf(error) === undefined ? undefined : error;
        },
      )
      .finally(() => {
        if (this.lookups.get(source.id) === looked) this.lookups.delete(source.id);
      });
    this.lookups.set(source.id, looked);
  }

  private act(
    source: MessageSource,
    number: number,
    kind: DeviceMessageKind,
    text: string,
    context: string,
    credentials: DeviceCredentials | undefined,
    read: number,
  ) {
    if (!credentials) {
      this.answer(
        source,
        number,
        failure(context, 401, [
          { code: 'unauthorized', message: 'the key pair this connection signed in with is gone' },
        ]),
        read,
      );
      return source.close(NOT_AUTHORIZED);
    }
    actOnDeviceMessage(this.devices, kind, text, credentials.principal, context, mqttSource(source)).then(
      (ack) => this.answer(source, number, ack, read),
      (error) => this.answer(source, number, storeFailure(context, error), read, error),
    );
  }

  private answer(source: MessageSource, number: number, ack: Ack, read: number, error?: unknown): void {
    if (error !== undefined && unexpected(error)) this.log.error(error, 'MQTT message failed');
    this.inbound.answered(source.id);
    this.onAnswered?.((performance.now() - read) / 1000);
    // Refused later, by the writer's limits and shares: read no more of the device's for now, too.
    if (ack.http_code === 503 || ack.http_code === 429) {
      this.refuse(source, number, ack);
      return;
    }
    this.send(source, number, ack);
    if (source.readingHeld && this.inbound.pending(source.id) <= READ_AHEAD / 2) this.releaseSoon(source);
  }

  /** Sends the answer of the connection's message `number` in its turn (AnswerOrder). */
  private send(source: MessageSource, number: number, ack: Ack): void {
    source.answerOrder.answer(number, ack, source);
  }

  private hold(source: MessageSource): void {
    this.releasing.delete(source);
    source.holdReading();
  }

  /** Reads the held connection again on a coming turn, after those due before it (RELEASES_PER_TURN). */
  private releaseSoon(source: MessageSource): void {
    this.releasing.add(source);
    this.releaseTurn ??= setImmediate(() => this.releaseSome());
  }

  private releaseSome(): void {
    this.releaseTurn = undefined;
    let released = 0;
    for (const source of this.releasing) {
      if (released++ === RELEASES_PER_TURN) break;
      this.releasing.delete(source);
      source.releaseReading();
    }
    if (this.releasing.size > 0) this.releaseTurn = setImmediate(() => this.releaseSome());
  }

  /**
   * Answers a message refused for overload, and reads no more of the connection's (docs/devices.md,
   * "Overload") until it has room again: once its messages taken are answered, or after HOLD_MS when
   * it has none waiting. A flooding device's messages then wait in TCP's buffers, where they cost the
   * server nothing, instead of being read, only to be refused, as fast as it writes them; and the
   * server thread's turns stay short for the devices that send at a normal rate.
   */
  private refuse(source: MessageSource, number: number, ack: Ack): void {
    source.answerOrder.answerAtOnce(number, ack, source);
    if (this.stopping) return;
    this.hold(source);
    if (this.inbound.pending(source.id) > 0) return;
    this.idleHeld.add(source);
    this.idleTimer ??= setTimeout(() => {
      this.idleTimer = undefined;
      for (const each of this.idleHeld) this.releaseSoon(each);
      this.idleHeld.clear();
    }, HOLD_MS).unref();
  }
}
