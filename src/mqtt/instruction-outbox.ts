/**
 * Instructions on their way to the external broker (MQTT_URL; docs/operations.md, "When the database
 * fails"). mqtt.js keeps every QoS 2 message published while it is not connected, without a bound,
 * and its promise settles only once the broker is back: the request that sent an instruction then
 * waited as long, and each one sent again meanwhile added a message. Here a message is published only
 * while connected; otherwise it is held, within bounds, and published once the connection is made
 * again. Whoever sends waits at most `waitMs` for the broker to take it: the instruction is stored and
 * stays `pending` until then.
 */
import { waitAtMost } from '../core/wait.ts';

/** What the outbox needs of the MQTT client. */
export interface OutboxClient {
  readonly connected: boolean;
  publishAsync(topic: string, payload: string, options: { qos: 2 }): Promise<unknown>;
}

export interface OutboxLimits {
  /** Messages held while the broker is away; past it the oldest goes (its instruction stays pending). */
  maxHeld: number;
  /** Their bytes (payloads) together; past it the oldest go. */
  maxHeldBytes: number;
  /** Messages published and not yet taken by the broker (QoS 2 handshake); past it new ones are held. */
  maxInFlight: number;
  /** How long a sender waits for the broker to take its message (ms). */
  waitMs: number;
}

export const DEFAULT_OUTBOX_LIMITS: OutboxLimits = {
  maxHeld: 10_000,
  maxHeldBytes: 16 * 1024 * 1024,
  maxInFlight: 1000,
  waitMs: 2000,
};

interface Held {
  topic: string;
  payload: string;
  alertKey: string;
}

export class InstructionOutbox {
  private held: Held[] = [];
  /** Where the oldest message still held is in `held` (taken from the front without copying). */
  private first = 0;
  private heldBytes = 0;
  private inFlight = 0;
  /** How many messages of each instruction's alert are held or in flight (carries). */
  private readonly carried = new Map<string, number>();

  constructor(
    private readonly client: OutboxClient,
    private readonly events: {
      /** The broker took the message of this instruction's alert. */
      delivered(alertKey: string): void;
      /** Messages dropped unsent (their instructions stay pending). */
      dropped(count: number): void;
      failed(error: Error): void;
      /** Nothing is held or in flight any more, the connection up. */
      idle?(): void;
    },
    private readonly limits: OutboxLimits = DEFAULT_OUTBOX_LIMITS,
  ) {}

  /** Messages held now, for tests and the log. */
  get heldCount(): number {
    return this.held.length - this.first;
  }

  /** Whether a message of this instruction's alert is held or on its way to the broker. */
  carries(alertKey: string): boolean {
    return this.carried.has(alertKey);
  }

  /**
   * Publishes the message now if the client is connected (and not too many are in flight), else holds
   * it. Resolves once the broker took it, it is held, or `waitMs` passed.
   */
  async send(topic: string, payload: string, alertKey: string): Promise<void> {
    const message = { topic, payload, alertKey };
    this.carried.set(alertKey, (this.carried.get(alertKey) ?? 0) + 1);
    if (!this.client.connected || this.inFlight >= this.limits.maxInFlight) {
      this.hold(message);
      return;
    }
    await waitAtMost(this.publish(message), this.limits.waitMs);
  }

  /** The connection is made (again): what is held is published, oldest first, as far as in flight allows. */
  flush(): void {
    while (this.client.connected && this.inFlight < this.limits.maxInFlight && this.heldCount > 0) {
      void this.publish(this.takeOldest());
    }
  }

  private publish(message: Held): Promise<void> {
    this.inFlight++;
    return this.client
      .publishAsync(message.topic, message.payload, { qos: 2 })
      .then(
        () => this.events.delivered(message.alertKey),
        (error: Error) => this.events.failed(error),
      )
      .finally(() => {
        this.inFlight--;
        this.letGo(message.alertKey);
        if (this.heldCount > 0) this.flush();
        if (this.inFlight === 0 && this.heldCount === 0 && this.client.connected) this.events.idle?.();
      });
  }

  private hold(message: Held): void {
    this.held.push(message);
    this.heldBytes += message.payload.length;
    let dropped = 0;
    while (this.heldCount > this.limits.maxHeld || this.heldBytes > this.limits.maxHeldBytes) {
      this.letGo(this.takeOldest().alertKey);
      dropped++;
    }
    if (dropped > 0) this.events.dropped(dropped);
  }

  /** A message of the alert has left the outbox: taken by the broker, refused, or dropped. */
  private letGo(alertKey: string): void {
    const count = (this.carried.get(alertKey) ?? 1) - 1;
    if (count > 0) this.carried.set(alertKey, count);
    else this.carried.delete(alertKey);
  }

  private takeOldest(): Held {
    const oldest = this.held[this.first] as Held;
    this.first++;
    this.heldBytes -= oldest.payload.length;
    // The front is cut off once it is most of the array: each message is copied at most once more.
    if (this.first * 2 >= this.held.length) {
      this.held = this.held.slice(this.first);
      this.first = 0;
    }
    return oldest;
  }
}
