/**
 * The fleet floor's store (bench/servers/mqtt-floor.ts, and the `writer` benchmark's baseline): the
 * least a server stores for an event. A table of (id, thing, time, data) indexed on (thing, time) in a
 * new SQLite file in WAL with `synchronous = FULL`, as Thingbase's default durability; one prepared
 * insert an event, a transaction a batch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export interface FloorStore {
  /** Stores the rows (thing, time, data) in one transaction. */
  store(rows: [string, number, string][]): void;
  /** Closes the file and removes it. */
  close(): void;
}

export function openFloorStore(): FloorStore {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-floor-'));
  const db = new Database(join(dir, 'floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(
    'create table events (id integer primary key, thing text not null, timestamp integer not null, data text not null)',
  );
  db.exec('create index events_by_thing on events (thing, timestamp)');
  const insert = db.prepare('insert into events (thing, timestamp, data) values (?, ?, ?)');
  const store = db.transaction((rows: [string, number, string][]) => {
    for (const row of rows) insert.run(row);
  });
  return {
    store,
    close: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
