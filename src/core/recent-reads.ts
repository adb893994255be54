/**
 * Values read from the store and used again for a short while without reading them again: who is
 * behind a token (sessions/service.ts), what a device key pair may do (devices/authentication.ts).
 *
 * A change is announced here by the change feed (core/change-feed.ts) once it has committed; one made
 * through another instance when its notice arrives, a little later. What its scope read before the
 * change, or within the same short while after it (a read may have begun before the change committed
 * and end after it was told), is then read again. Values read before a change whose notice was missed
 * (another instance's, while the link between them was down) expire with their short while.
 */

/** Milliseconds that never go back, unlike the wall clock. */
export const monotonicNow = (): number => performance.now();

interface Entry<V> {
  value: V;
  scope: string;
  /** When its read began. */
  readAt: number;
}

export class RecentReads<V> {
  private readonly entries = new Map<string, Entry<V>>();
  /** When each scope last changed, for changes recent enough to matter. */
  private readonly changedAt = new Map<string, number>();
  /** When any scope last changed. */
  private lastChangeAt = Number.NEGATIVE_INFINITY;
  /** When every scope last changed at once. */
  private everyScopeChangedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** The value of `key` if its read is recent and no change of its scope may have been missed by it. */
  get(key: string, now = monotonicNow()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry || now - entry.readAt >= this.ttlMs) return undefined;
    return this.readAfterChanges(entry.readAt, this.changedAt.get(entry.scope)) &&
      this.readAfterChanges(entry.readAt, this.everyScopeChangedAt)
      ? entry.value
      : undefined;
  }

  /** Keeps a value whose read began at `readAt` (monotonicNow); the oldest goes when full. */
  set(key: string, value: V, scope: string, readAt: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, scope, readAt });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Whether a read begun at `startedAt` saw every change of every scope. */
  isAfterEveryChange(startedAt: number): boolean {
    return this.readAfterChanges(startedAt, this.lastChangeAt);
  }

  /** Announces a change to these scopes: what they read until it has surely committed is read again. */
  changed(scopes: Iterable<string>): void {
    const now = monotonicNow();
    for (const [scope, at] of this.changedAt) if (at < now - 2 * this.ttlMs) this.changedAt.delete(scope);
    const changed = new Set(scopes);
    for (const scope of changed) this.changedAt.set(scope, now);
    this.lastChangeAt = now;
    for (const [key, entry] of this.entries) if (changed.has(entry.scope)) this.entries.delete(key);
  }

  /** Announces a change that may concern every scope. */
  changedEverywhere(): void {
    this.everyScopeChangedAt = monotonicNow();
    this.lastChangeAt = this.everyScopeChangedAt;
    this.entries.clear();
  }

  private readAfterChanges(readAt: number, changedAt: number | undefined): boolean {
    return changedAt === undefined || readAt > changedAt + this.ttlMs;
  }
}
