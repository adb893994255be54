/**
 * Answers kept in memory, each under the change generations of the organisations it shows, as they
 * were before it was read: served again only while no change of its entity type has been told since
 * in those organisations (the change feed, core/change-feed.ts). A change made through this instance
 * shows in the next answer; one made through another instance once its notice arrives (milliseconds;
 * docs/architecture.md, "The change feed"). Bounded by entries and by the bytes they hold; the oldest
 * goes first.
 */
import type { ChangeFeed, EntityType } from '../change-feed.ts';

interface Entry {
  revision: string;
  /** The answer's bytes: written as they are, with no encoding or length to work out again. */
  bytes: Buffer;
}

export class AnswerCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(
    private readonly maxEntries = 1000,
    private readonly maxBytes = 16 * 1024 * 1024,
  ) {}

  /** The answer kept under `key` if it was read under `revision`. */
  get(key: string, revision: string): Buffer | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.revision === revision ? entry.bytes : undefined;
  }

  /** Keeps an answer read under `revision` (read before the answer's data). */
  set(key: string, revision: string, bytes: Buffer): void {
    this.delete(key);
    if (bytes.length > this.maxBytes / 16) return;
    while (this.entries.size >= this.maxEntries || this.bytes + bytes.length > this.maxBytes) {
      this.delete(this.entries.keys().next().value as string);
    }
    this.entries.set(key, { revision, bytes });
    this.bytes += bytes.length;
  }

  get size(): number {
    return this.entries.size;
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes.length;
  }
}

/**
 * Counts the changes of one entity type told by the change feed, per organisation: equal texts for a
 * set of organisations mean that no change of the type was told in any of them in between.
 */
export class ChangeGenerations {
  private readonly counts = new Map<string, number>();
  /** Raised by a change in an unknown organisation (changes the instance may have missed). */
  private everywhere = 0;

  constructor(
    private readonly feed: ChangeFeed,
    entityType: EntityType,
  ) {
    feed.follow([entityType], (change) => {
      if (change.organisationKey === null) {
        this.everywhere++;
        this.counts.clear();
      } else {
        this.counts.set(change.organisationKey, (this.counts.get(change.organisationKey) ?? 0) + 1);
      }
    });
  }

  /**
   * The generation of these organisations, as one text, once every change committed before the call
   * has been told (a promise when that takes a round trip to the store).
   */
  of(organisationKeys: readonly string[]): string | Promise<string> {
    const caughtUp = this.feed.catchUp();
    if (caughtUp) return caughtUp.then(() => this.text(organisationKeys));
    return this.text(organisationKeys);
  }

  private text(organisationKeys: readonly string[]): string {
    let text = String(this.everywhere);
    for (const key of organisationKeys) text += `;${this.counts.get(key) ?? 0}`;
    return text;
  }
}
