/**
 * How many messages from the external broker are handled at once (docs/configuration.md, "MQTT"): at
 * most `messages`, their text at most `bytes` (a message of any size while none is handled). The next
 * message is held here until one ends, and with it everything behind it: the broker connection's
 * reader (mqtt.js) takes its next packet, and acknowledges this one to the broker, only once this one
 * is let through. The broker keeps the rest meanwhile, and TCP slows it, instead of the server's
 * memory holding them.
 *
 * One message at most is held. mqtt.js offers another before the held one is let through only when
 * the connection the held one came by was lost (a connection made again reads on its own): that one is
 * dropped then, as the broker drops what it still held for the lost connection (its session is
 * clean), and its device, unanswered, sends it again.
 *
 * While a message is held, mqtt.js reads nothing else either, the broker's PINGRESP included: the
 * connection's keep-alive asks `heldWithin` whether an unanswered ping says anything
 * (external-broker.ts).
 */

export interface IntakeLimits {
  /** Messages handled at once. */
  messages: number;
  /** Bytes of their text. */
  bytes: number;
}

/** A message waiting for room, and what starts its handling. */
interface Held {
  size: number;
  handOn: () => Promise<unknown>;
}

export class ExternalIntake {
  private pending = 0;
  private pendingBytes = 0;
  private held: Held | undefined;
  /** When the last message held was let through (ms since the epoch). */
  private heldEndedAt = Number.NEGATIVE_INFINITY;
  private closed = false;
  /** The most messages ever handled at once (diagnostics and tests). */
  private highWater = 0;
  /** Told when no message is being handled or held. */
  private onIdle: (() => void)[] = [];

  constructor(private readonly limits: IntakeLimits) {}

  /** Settles once no message is being handled or held (at once when none is). */
  idle(): Promise<void> {
    if (this.pending === 0 && this.held === undefined) return Promise.resolve();
    return new Promise((resolve) => this.onIdle.push(resolve));
  }

  /**
   * A message of `size` bytes arrived: `handOn` starts its handling (and lets the reader go on) now if
   * there is room, else once there is. Its promise settles when the handling ends. After `close`,
   * nothing is handed on.
   */
  offer(size: number, handOn: () => Promise<unknown>): void {
    if (this.closed) return;
    // One held still is of a connection since lost (above).
    this.held = undefined;
    if (this.fits(size)) this.start(size, handOn);
    else this.held = { size, handOn };
  }

  /** The connection was lost: the message held, if any, is dropped (above). */
  dropHeld(): void {
    this.held = undefined;
    // What was held concerns the lost connection, not the next one's keep-alive.
    this.heldEndedAt = Number.NEGATIVE_INFINITY;
  }

  /** Whether a message is held now, or was at some moment of the last `ms`. */
  heldWithin(ms: number): boolean {
    return this.held !== undefined || Date.now() - this.heldEndedAt <= ms;
  }

  /** Nothing more is handed on, and the message held is dropped; those being handled end on their own. */
  close(): void {
    this.closed = true;
    this.held = undefined;
  }

  /** Messages being handled, whether one waits for room, and the most ever handled at once. */
  figures(): { pending: number; held: boolean; highWater: number } {
    return { pending: this.pending, held: this.held !== undefined, highWater: this.highWater };
  }

  private fits(size: number): boolean {
    return this.pending === 0 || (this.pending < this.limits.messages && this.pendingBytes + size <= this.limits.bytes);
  }

  private start(size: number, handOn: () => Promise<unknown>): void {
    this.pending += 1;
    this.pendingBytes += size;
    if (this.pending > this.highWater) this.highWater = this.pending;
    const ended = () => {
      this.pending -= 1;
      this.pendingBytes -= size;
      const held = this.held;
      if (held && !this.closed && this.fits(held.size)) {
        this.held = undefined;
        this.heldEndedAt = Date.now();
        this.start(held.size, held.handOn);
      }
      if (this.pending === 0 && this.held === undefined && this.onIdle.length > 0) {
        const told = this.onIdle;
        this.onIdle = [];
        for (const tell of told) tell();
      }
    };
    handOn().then(ended, ended);
  }
}
