/**
 * The clients' sockets the process holds, HTTP and MQTT (the device endpoint's). Every socket holds a
 * file descriptor, and all of them
 * together stay within the socket budget: the open-file limit less the descriptors kept for the store,
 * logs and outbound calls (open-files.ts). A flood of connections on one port then cannot leave the
 * process without descriptors for the other port or for its store (docs/configuration.md,
 * HTTP_MAX_CONNECTIONS and MQTT_MAX_CONNECTIONS).
 */
export type SocketKind = 'http' | 'mqtt';

/** Why a socket is refused: its own kind's limit, or the budget of both kinds together. */
export type SocketRefusal = 'kind' | 'budget';

export class SocketCount {
  private readonly counts: Record<SocketKind, number> = { http: 0, mqtt: 0 };

  constructor(readonly budget: number) {}

  /** Counts a socket of `kind` that is already open; `release` it when it closes. */
  add(kind: SocketKind): void {
    this.counts[kind]++;
  }

  release(kind: SocketKind): void {
    this.counts[kind]--;
  }

  /**
   * Whether the sockets counted, `kind`'s own at most `limit`, are within their limits: undefined when
   * they are, else which limit they are past.
   */
  past(kind: SocketKind, limit: number): SocketRefusal | undefined {
    if (this.counts[kind] > limit) return 'kind';
    return this.total() > this.budget ? 'budget' : undefined;
  }

  /**
   * Whether the sockets counted are past the budget and `room` more: a connection the endpoint can only
   * refuse once it has read its CONNECT is let wait for it within that room, and closed at once past it.
   */
  pastRoom(room: number): boolean {
    return this.total() > this.budget + room;
  }

  /** Sockets of both kinds counted now. */
  private total(): number {
    return this.counts.http + this.counts.mqtt;
  }

  /** Sockets of `kind` counted now. */
  of(kind: SocketKind): number {
    return this.counts[kind];
  }

  /** The log line for sockets refused past the budget; `refusing` says what is refused and how. */
  pastBudget(refusing: string): string {
    return `client connections, HTTP and MQTT together, at the process's budget of ${this.budget} (its open-file limit less those kept for the store): ${refusing}`;
  }
}
