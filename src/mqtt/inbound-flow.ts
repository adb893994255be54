/**
 * How many device messages may wait for their answer (docs/devices.md, "Overload"). The device
 * endpoint reads packets far faster than the store can take their events; every message it takes is
 * counted here until its acknowledgement is written. A message that would take a connection, or all
 * of them together, past their limits is not taken: the endpoint answers it at once with a 503
 * acknowledgement, so the device learns to
 * send again later within milliseconds, and the server's memory holds no more than the limits allow.
 *
 * The limits also keep a message taken from waiting long for its answer (`maxWaitMs`): under a flood,
 * the count and bytes alone are seconds of the store's work. While the server cannot keep up (every
 * message answered over a second had waited at least half of `maxWaitMs`), the bytes waiting may be
 * at most what it answered in `maxWaitMs` at that second's rate, and at least LEAST_WAITING_BYTES; once
 * it keeps up again, the count and bytes alone apply, so a burst it can work through is taken whole.
 * And while messages wait but none has been answered for four times `maxWaitMs` (the store stands
 * still), no new one is taken.
 *
 * Past half of the count or of the bytes that may wait, those limits are shared: a connection that
 * holds an equal share of them (of one more connection than those holding messages, so that room is
 * left for one that holds none) is refused, while the others are still taken up to the limits. A
 * device flooding its connection then cannot take the room of those sending at a normal rate
 * (docs/operations.md, "Admission of events").
 */

export interface InboundLimits {
  /** Messages of one connection handed on and not yet answered. */
  perConnection: number;
  /** Messages of all connections handed on and not yet answered. */
  messages: number;
  /** Bytes of those messages' text. */
  bytes: number;
  /** How long (ms) a message taken should wait for its answer while the server cannot keep up. */
  maxWaitMs: number;
  /**
   * While the event writer is behind, refuse only the messages of connections that already have one
   * waiting (fair shares, events/fair-share.ts), not every message: a device that waits for each
   * answer is still taken, and the writer decides by its shares; a flooding connection has one
   * message at a time on the server thread, whose work on messages that would be refused stays
   * bounded. Without it, every message is refused while the writer is behind.
   */
  fairWhileBehind?: boolean;
}

/** Bytes that may always wait, whatever the rate the server answers at. */
export const LEAST_WAITING_BYTES = 1024 * 1024;
/** The part of the count and bytes that may wait kept for connections holding no message. */
const NEWCOMERS_ROOM = 1 / 8;
/** How many times `maxWaitMs` without an answer, while messages wait, make the store stand still. */
const STALL_WAITS = 4;
/** How long answers are counted over to measure the rate the server answers at (ms). */
const RATE_WINDOW_MS = 1000;

/** A message handed on and not yet answered. */
interface Handed {
  size: number;
  /** When it was handed on (the flow's clock, ms). */
  at: number;
}

/** A connection's messages handed on and not yet answered, oldest first, and their bytes. */
interface Flow {
  handed: Handed[];
  bytes: number;
}

export class InboundFlow {
  /** By connection, its messages handed on and not yet answered. */
  private readonly flows = new Map<number, Flow>();
  private messages = 0;
  private bytes = 0;
  /** The most messages ever unanswered at once (diagnostics and tests). */
  highWater = 0;
  /** Bytes answered per second over the last window, when the server could not keep up in it; else unbounded. */
  private rate = Number.POSITIVE_INFINITY;
  private windowStart: number;
  private windowBytes = 0;
  /** Whether every message answered in this window had waited at least half of `maxWaitMs`. */
  private windowBehind = true;
  /** The last answer, or when messages began to wait after none did: the store's last sign of progress. */
  private progressAt = 0;

  constructor(
    private readonly limits: InboundLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.windowStart = now();
  }

  /** Whether a message of `size` may be handed on now (nothing is counted). */
  mayHandOn(connection: number, size: number): boolean {
    return this.fits(connection, size, this.now());
  }

  /** Whether a message may be handed on now; when it may, it is counted until answered. */
  handOn(connection: number, size: number): boolean {
    const at = this.now();
    if (!this.fits(connection, size, at)) return false;
    const flow = this.flows.get(connection);
    if (flow === undefined) this.flows.set(connection, { handed: [{ size, at }], bytes: size });
    else {
      flow.handed.push({ size, at });
      flow.bytes += size;
    }
    if (this.messages === 0) this.progressAt = at;
    this.messages += 1;
    this.bytes += size;
    if (this.messages > this.highWater) this.highWater = this.messages;
    return true;
  }

  /** A message of a connection was answered: its oldest. */
  answered(connection: number): void {
    const flow = this.flows.get(connection);
    if (!flow) return;
    const handed = flow.handed.shift() as Handed;
    flow.bytes -= handed.size;
    if (flow.handed.length === 0) this.flows.delete(connection);
    this.messages -= 1;
    this.bytes -= handed.size;
    const now = this.now();
    this.progressAt = now;
    this.windowBytes += handed.size;
    if (now - handed.at < this.limits.maxWaitMs / 2) this.windowBehind = false;
    if (now - this.windowStart >= RATE_WINDOW_MS) {
      this.rate = this.windowBehind ? (this.windowBytes * 1000) / (now - this.windowStart) : Number.POSITIVE_INFINITY;
      this.windowStart = now;
      this.windowBytes = 0;
      this.windowBehind = true;
    }
  }

  /** Whether a message of the connection is refused while the event writer is behind (`fairWhileBehind`). */
  refusedWhileBehind(connection: number): boolean {
    return !this.limits.fairWhileBehind || this.flows.has(connection);
  }

  /** Messages handed on and not yet answered, of one connection or of all. */
  pending(connection?: number): number {
    return connection === undefined ? this.messages : (this.flows.get(connection)?.handed.length ?? 0);
  }

  /** Whether a message of `size` may be handed on at `now`. */
  private fits(connection: number, size: number, now: number): boolean {
    if (this.messages === 0) return true;
    const flow = this.flows.get(connection);
    const held = flow?.handed.length ?? 0;
    // Connections holding messages may fill all but NEWCOMERS_ROOM of the limits: the rest is kept for
    // those holding none, as a device waiting for each answer does when it sends.
    const room = flow === undefined ? 1 : 1 - NEWCOMERS_ROOM;
    const byteLimit = this.byteLimit();
    if (
      held >= this.limits.perConnection ||
      this.messages >= this.limits.messages * room ||
      this.bytes + size > byteLimit * room ||
      now - this.progressAt > STALL_WAITS * this.limits.maxWaitMs
    ) {
      return false;
    }
    if (flow === undefined) return true;
    // Past half of a limit, a connection holding its share of it waits for its answers first.
    const holders = this.flows.size + 1;
    if (this.messages >= this.limits.messages / 2 && held >= this.limits.messages / holders) return false;
    return !(this.bytes + size > byteLimit / 2 && flow.bytes + size > byteLimit / holders);
  }

  /** The bytes that may wait now: at most what the server answers in `maxWaitMs` while it cannot keep up. */
  private byteLimit(): number {
    const answerable = (this.rate * this.limits.maxWaitMs) / 1000;
    return Math.min(this.limits.bytes, Math.max(LEAST_WAITING_BYTES, answerable));
  }
}
