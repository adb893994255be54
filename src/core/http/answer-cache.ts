/**
 * Answers kept in memory, each under the change revisions it was read under (audit/revisions.ts):
 * served again only while those revisions are unchanged, so a change made through any instance shows
 * in the next answer of every instance. Bounded by entries and by the bytes they hold; the
 * oldest goes first.
 */

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
