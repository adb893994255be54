/**
 * Answers kept in memory, each under the change revisions it was read under (audit/revisions.ts):
 * served again only while those revisions are unchanged, so a change made through any instance shows
 * in the next answer of every instance. Bounded by entries and by the characters they hold; the
 * oldest goes first.
 */

interface Entry {
  revision: string;
  text: string;
}

export class AnswerCache {
  private readonly entries = new Map<string, Entry>();
  private characters = 0;

  constructor(
    private readonly maxEntries = 1000,
    private readonly maxCharacters = 16 * 1024 * 1024,
  ) {}

  /** The answer kept under `key` if it was read under `revision`. */
  get(key: string, revision: string): string | undefined {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.revision === revision ? entry.text : undefined;
  }

  /** Keeps an answer read under `revision` (read before the answer's data). */
  set(key: string, revision: string, text: string): void {
    this.delete(key);
    if (text.length > this.maxCharacters / 16) return;
    while (this.entries.size >= this.maxEntries || this.characters + text.length > this.maxCharacters) {
      this.delete(this.entries.keys().next().value as string);
    }
    this.entries.set(key, { revision, text });
    this.characters += text.length;
  }

  get size(): number {
    return this.entries.size;
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.characters -= entry.text.length;
  }
}
