/**
 * A turn of the event loop for other work: a long run of reads on SQLite (better-sqlite3 is
 * synchronous) or of computation awaits it between its steps, so requests, ingestion and timers are
 * served meanwhile instead of after the whole run.
 */
export const giveWay = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
