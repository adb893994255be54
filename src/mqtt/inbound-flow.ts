/**
 * How many device messages may wait for the server thread (docs/devices.md, "Overload"). The broker
 * thread reads packets far faster than the store can take their events; every message it hands to
 * the server thread is counted here until its acknowledgement (or the order to close its connection)
 * comes back. A message that would take a connection, or all of them together, past their limits is
 * not handed on: the broker answers it at once with a 503 acknowledgement, so the device learns to
 * send again later within milliseconds, and the server's memory holds no more than the limits allow.
 */

export interface InboundLimits {
  /** Messages of one connection handed on and not yet answered. */
  perConnection: number;
  /** Messages of all connections handed on and not yet answered. */
  messages: number;
  /** Bytes of those messages' text. */
  bytes: number;
}

export class InboundFlow {
  /** By connection, the sizes of its messages handed on and not yet answered, oldest first. */
  private readonly flows = new Map<number, number[]>();
  private messages = 0;
  private bytes = 0;
  /** The most messages ever unanswered at once (diagnostics and tests). */
  highWater = 0;

  constructor(private readonly limits: InboundLimits) {}

  /** Whether a message of `size` may be handed on now (nothing is counted). */
  mayHandOn(connection: number, size: number): boolean {
    return !(
      (this.flows.get(connection)?.length ?? 0) >= this.limits.perConnection ||
      this.messages >= this.limits.messages ||
      (this.messages > 0 && this.bytes + size > this.limits.bytes)
    );
  }

  /** Whether a message may be handed on now; when it may, it is counted until answered. */
  handOn(connection: number, size: number): boolean {
    if (!this.mayHandOn(connection, size)) return false;
    const sizes = this.flows.get(connection);
    if (sizes === undefined) this.flows.set(connection, [size]);
    else sizes.push(size);
    this.messages += 1;
    this.bytes += size;
    if (this.messages > this.highWater) this.highWater = this.messages;
    return true;
  }

  /** A message of a connection was answered (or its connection ordered closed). */
  answered(connection: number): void {
    const sizes = this.flows.get(connection);
    if (!sizes) return;
    this.messages -= 1;
    this.bytes -= sizes.shift() ?? 0;
    if (sizes.length === 0) this.flows.delete(connection);
  }

  /** Messages handed on and not yet answered, of one connection or of all. */
  pending(connection?: number): number {
    return connection === undefined ? this.messages : (this.flows.get(connection)?.length ?? 0);
  }
}
