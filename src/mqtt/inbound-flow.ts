/**
 * Back-pressure on device connections (docs/devices.md, "Overload"). The broker thread reads packets
 * far faster than the store can take their events; every message it hands to the server thread is
 * counted here until its acknowledgement (or the order to close its connection) comes back. A
 * connection with too many messages unanswered, or any connection that sends while the whole is
 * over its limit, is held: its next message waits to be admitted, and the broker reads nothing more
 * from its socket until the packets it has read are done, so the device's packets wait in the
 * kernel's socket buffers and TCP slows the device down instead of the server's memory growing. It
 * is admitted again once its own count and the whole have come down well below their limits.
 */

export interface InboundLimits {
  /** Messages of one connection handed on and not yet answered. */
  perConnection: number;
  /** Messages of all connections handed on and not yet answered. */
  messages: number;
  /** Bytes of those messages' text. */
  bytes: number;
}

/** Resumption waits until the whole is below this share of its limits (no pause and resume at every message). */
const RESUME_SHARE = 0.75;

interface Flow {
  /** Sizes of the messages handed on, oldest first. */
  sizes: number[];
  paused: boolean;
  /** Messages read while held, each waiting to go on, in order. */
  waiting: (() => void)[];
  closed: boolean;
}

export class InboundFlow {
  private readonly flows = new Map<number, Flow>();
  private readonly paused = new Set<number>();
  private messages = 0;
  private bytes = 0;
  /** The most messages ever unanswered at once (diagnostics and tests). */
  highWater = 0;

  constructor(private readonly limits: InboundLimits) {}

  /** Lets a message of a connection go on now, or once the connection is no longer held. */
  admit(connection: number, go: () => void): void {
    const flow = this.flows.get(connection);
    if (flow?.paused) flow.waiting.push(go);
    else go();
  }

  /** A message of a connection was handed on. */
  handedOn(connection: number, size: number): void {
    const flow = this.flowOf(connection);
    flow.sizes.push(size);
    this.messages += 1;
    this.bytes += size;
    if (this.messages > this.highWater) this.highWater = this.messages;
    if (
      !flow.paused &&
      (flow.sizes.length >= this.limits.perConnection ||
        this.messages >= this.limits.messages ||
        this.bytes >= this.limits.bytes)
    ) {
      flow.paused = true;
      this.paused.add(connection);
    }
  }

  /** A message of a connection was answered (or its connection ordered closed). */
  answered(connection: number): void {
    const flow = this.flows.get(connection);
    if (!flow) return;
    const wasBusy = this.busy();
    this.messages -= 1;
    this.bytes -= flow.sizes.shift() ?? 0;
    if (flow.sizes.length === 0 && flow.closed) this.flows.delete(connection);
    if (this.busy()) return;
    if (wasBusy) {
      for (const id of [...this.paused]) this.resumeIfDue(id);
    } else if (flow.paused) {
      this.resumeIfDue(connection);
    }
  }

  /** The connection is gone; its messages still under way are counted until answered, those held dropped. */
  closed(connection: number): void {
    const flow = this.flows.get(connection);
    if (!flow) return;
    flow.closed = true;
    flow.paused = false;
    flow.waiting = [];
    this.paused.delete(connection);
    if (flow.sizes.length === 0) this.flows.delete(connection);
  }

  /** Messages handed on and not yet answered, of one connection or of all. */
  pending(connection?: number): number {
    return connection === undefined ? this.messages : (this.flows.get(connection)?.sizes.length ?? 0);
  }

  private flowOf(connection: number): Flow {
    let flow = this.flows.get(connection);
    if (!flow) {
      flow = { sizes: [], paused: false, waiting: [], closed: false };
      this.flows.set(connection, flow);
    }
    return flow;
  }

  private busy(): boolean {
    return this.messages >= this.limits.messages * RESUME_SHARE || this.bytes >= this.limits.bytes * RESUME_SHARE;
  }

  private resumeIfDue(connection: number): void {
    const flow = this.flows.get(connection);
    if (!flow?.paused || flow.sizes.length > this.limits.perConnection / 2) return;
    flow.paused = false;
    this.paused.delete(connection);
    // Each may hold the connection again as it is handed on; the rest then wait on.
    while (!flow.paused && flow.waiting.length > 0) (flow.waiting.shift() as () => void)();
  }
}
