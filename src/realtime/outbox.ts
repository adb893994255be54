/**
 * What waits to be sent to one realtime connection (docs/realtime.md, "Slow consumers"). Messages
 * wait here until the pumper (below) hands them to the transport, as long as it takes them; when it
 * does not (a client that reads slowly, or not at all), they wait, up to MAX_WAITING messages and
 * MAX_WAITING_BYTES of text, and all outboxes together MAX_WAITING_BYTES_IN_ALL. Beyond that the
 * oldest are dropped, and before the next message the
 * client is told, per subscription, how many it lost: `{"type":"overflow","id":...,"dropped":N}`. So
 * a connection holds at most that much memory, whatever its client does.
 *
 * Sending is not done where messages are made (right after a commit, in the event writer's path): the
 * pumper sends in slices of a few milliseconds between the server's other work, and rests as long as
 * it worked before the next slice. So however many messages subscribers are owed, ingestion keeps at
 * least half of the main thread: what cannot be sent in time waits, and then is dropped.
 */

export const MAX_WAITING = 10_000;
export const MAX_WAITING_BYTES = 16 * 1024 * 1024;
/**
 * Text waiting in all outboxes together: beyond it, a message pushed to an outbox holding at least its
 * share (the average of the outboxes holding any) drops the oldest of that outbox. Those that hold
 * less keep theirs: clients that never read, one tenant's or another's, cannot make everybody else lose
 * messages.
 */
export const MAX_WAITING_BYTES_IN_ALL = 128 * 1024 * 1024;
let waitingInAll = 0;
/** Outboxes holding any text. */
let holdingInAll = 0;

export interface Outgoing {
  /** The subscription it belongs to ('' for none: replies to the client's own messages). */
  id: string;
  /** The message's `type` (SSE names its events by it). */
  type: string;
  /** The message as JSON. */
  text: string;
  /**
   * An answer to the client's own message (`subscribed`, an `error`...), or a subscription's end:
   * kept when the events around it are dropped, since the client cannot tell it lost one.
   */
  reply?: true;
}

/** Replies kept while their outbox drops events: a client that sends without reading loses them past it. */
export const MAX_KEPT_REPLIES = 1000;

/** Where messages go: a WebSocket or an SSE response. */
export interface Transport {
  /** Whether it takes another message now. */
  writable(): boolean;
  send(message: Outgoing): void;
  /** Holds writes back until `uncork`, so that several messages leave in one system call. */
  cork?(): void;
  uncork?(): void;
}

/** Messages one outbox sends in a turn before the next outbox's turn. */
const PER_TURN = 256;
/** How long the pumper works at a time. */
const SLICE_MS = 4;

/** Sends what waits in outboxes, in turns, in slices of SLICE_MS, resting as long after each. */
export class Pumper {
  private readonly due = new Set<Outbox>();
  private scheduled = false;

  schedule(outbox: Outbox): void {
    this.due.add(outbox);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.run());
  }

  private run(): void {
    const started = performance.now();
    let elapsed = 0;
    while (this.due.size > 0 && elapsed < SLICE_MS) {
      const turn = [...this.due];
      this.due.clear();
      const again: Outbox[] = [];
      let next = 0;
      while (next < turn.length && elapsed < SLICE_MS) {
        const outbox = turn[next++] as Outbox;
        if (outbox.pump(PER_TURN)) again.push(outbox);
        elapsed = performance.now() - started;
      }
      // Those that had no turn go first next time, then those that had one; then any new.
      const added = [...this.due];
      this.due.clear();
      for (const outbox of [...turn.slice(next), ...again, ...added]) this.due.add(outbox);
    }
    if (this.due.size === 0) {
      this.scheduled = false;
      return;
    }
    // More to send: after a rest as long as this slice, so that other work gets its share.
    if (elapsed < 1) setImmediate(() => this.run());
    else setTimeout(() => this.run(), Math.ceil(elapsed)).unref?.();
  }
}

const PUMPER = new Pumper();

export class Outbox {
  private waiting: (Outgoing | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  private readonly dropped = new Map<string, number>();
  /** Replies that were the oldest waiting when events were dropped: sent first, in their order. */
  private kept: Outgoing[] = [];
  /** Messages dropped in all, for diagnostics and tests. */
  droppedInAll = 0;

  /** `schedule` arranges for `pump` to run soon (by default in the shared pumper's slices). */
  constructor(
    private readonly transport: Transport,
    private readonly schedule: (outbox: Outbox) => void = (outbox) => PUMPER.schedule(outbox),
  ) {}

  /** Messages waiting now. */
  get length(): number {
    return this.waiting.length - this.head;
  }

  push(message: Outgoing): void {
    if (this.bytes === 0 && message.text.length > 0) holdingInAll++;
    this.waiting.push(message);
    this.bytes += message.text.length;
    waitingInAll += message.text.length;
    while (
      this.length > MAX_WAITING ||
      ((this.bytes > MAX_WAITING_BYTES || (waitingInAll > MAX_WAITING_BYTES_IN_ALL && this.holdsItsShare())) &&
        this.length > 1)
    ) {
      const oldest = this.take();
      if (oldest.reply && this.kept.length < MAX_KEPT_REPLIES) {
        this.kept.push(oldest);
        continue;
      }
      this.dropped.set(oldest.id, (this.dropped.get(oldest.id) ?? 0) + 1);
      this.droppedInAll++;
    }
    if (this.length === 1) this.schedule(this);
  }

  /** Whether this outbox holds at least the average of those holding any text. */
  private holdsItsShare(): boolean {
    return this.bytes * holdingInAll >= waitingInAll;
  }

  private take(): Outgoing {
    const oldest = this.waiting[this.head] as Outgoing;
    this.waiting[this.head] = undefined;
    this.head++;
    if (oldest.text.length > 0 && this.bytes === oldest.text.length) holdingInAll--;
    this.bytes -= oldest.text.length;
    waitingInAll -= oldest.text.length;
    return oldest;
  }

  /** Drops what waits (the connection is gone). */
  clear(): void {
    if (this.bytes > 0) holdingInAll--;
    waitingInAll -= this.bytes;
    this.waiting = [];
    this.head = 0;
    this.bytes = 0;
    this.dropped.clear();
    this.kept = [];
  }

  /** The transport has room again: sending goes on soon. */
  wake(): void {
    if (this.length > 0 || this.dropped.size > 0 || this.kept.length > 0) this.schedule(this);
  }

  /**
   * Sends what waits, at most `limit` messages, as far as the transport takes them. Answers whether
   * more could be sent now (more wait and the transport takes them).
   */
  pump(limit = Number.POSITIVE_INFINITY): boolean {
    this.transport.cork?.();
    let sent = 0;
    while (sent < limit && this.transport.writable()) {
      // Older than anything still waiting: they go first.
      if (this.kept.length > 0) {
        this.transport.send(this.kept.shift() as Outgoing);
        sent++;
        continue;
      }
      if (this.dropped.size > 0) {
        for (const [id, dropped] of this.dropped) {
          this.transport.send({ id, type: 'overflow', text: JSON.stringify({ type: 'overflow', id, dropped }) });
          sent++;
        }
        this.dropped.clear();
        continue;
      }
      if (this.length === 0) break;
      this.transport.send(this.take());
      sent++;
    }
    this.transport.uncork?.();
    if (this.length === 0) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    return (this.length > 0 || this.dropped.size > 0 || this.kept.length > 0) && this.transport.writable();
  }
}
