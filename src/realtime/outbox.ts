/**
 * What waits to be sent to one realtime connection (docs/realtime.md, "Slow consumers"). Messages go
 * straight to the transport while it takes them; when it does not (a client that reads slowly, or
 * not at all), they wait here, up to MAX_WAITING messages and MAX_WAITING_BYTES of text. Beyond that
 * the oldest are dropped, and before the next message the client is told, per subscription, how
 * many it lost: `{"type":"overflow","id":...,"dropped":N}`. So a connection holds at most that much
 * memory, whatever its client does.
 */

export const MAX_WAITING = 10_000;
export const MAX_WAITING_BYTES = 16 * 1024 * 1024;

export interface Outgoing {
  /** The subscription it belongs to ('' for none: replies to the client's own messages). */
  id: string;
  /** The message's `type` (SSE names its events by it). */
  type: string;
  /** The message as JSON. */
  text: string;
}

/** Where messages go: a WebSocket or an SSE response. */
export interface Transport {
  /** Whether it takes another message now. */
  writable(): boolean;
  send(message: Outgoing): void;
}

export class Outbox {
  private waiting: (Outgoing | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  private readonly dropped = new Map<string, number>();
  /** Messages dropped in all, for diagnostics and tests. */
  droppedInAll = 0;

  constructor(private readonly transport: Transport) {}

  /** Messages waiting now. */
  get length(): number {
    return this.waiting.length - this.head;
  }

  push(message: Outgoing): void {
    if (this.length === 0 && this.dropped.size === 0 && this.transport.writable()) {
      this.transport.send(message);
      return;
    }
    this.waiting.push(message);
    this.bytes += message.text.length;
    while (this.length > MAX_WAITING || (this.bytes > MAX_WAITING_BYTES && this.length > 1)) {
      const oldest = this.waiting[this.head] as Outgoing;
      this.waiting[this.head] = undefined;
      this.head++;
      this.bytes -= oldest.text.length;
      this.dropped.set(oldest.id, (this.dropped.get(oldest.id) ?? 0) + 1);
      this.droppedInAll++;
    }
    this.pump();
  }

  /** Sends what waits, as far as the transport takes it; the transport calls it when it has room again. */
  pump(): void {
    while (this.transport.writable()) {
      if (this.dropped.size > 0) {
        for (const [id, dropped] of this.dropped) {
          this.transport.send({ id, type: 'overflow', text: JSON.stringify({ type: 'overflow', id, dropped }) });
        }
        this.dropped.clear();
        continue;
      }
      if (this.length === 0) break;
      const next = this.waiting[this.head] as Outgoing;
      this.waiting[this.head] = undefined;
      this.head++;
      this.bytes -= next.text.length;
      this.transport.send(next);
    }
    if (this.length === 0) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
  }
}
