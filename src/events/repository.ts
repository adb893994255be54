/**
 * The events table: only the event writer adds rows (events/writer.ts), through this module. Reads of
 * stored events for queries are the queries capability's (queries/repository.ts).
 */
import { RowsStatement } from '../store/dialect.ts';
import type { Tx } from '../store/store.ts';

/** An event as the writer stores it. */
export interface NewEvent {
  thingId: number;
  /** When it happened (ms). */
  timestamp: number;
  data: Record<string, unknown>;
  waypoint: [number, number] | null;
}

/** Reads its rows from one parameter per column (store/dialect.ts, RowsStatement): compiled once. */
const insertRows = new RowsStatement(
  ['bigint', 'bigint', 'text', 'text'],
  (extra) => `insert into events (thing_id, timestamp, created_at, data, waypoint)
    select v.column1, v.column2, cast(${extra(0)} as bigint), v.column3, v.column4 from v`,
);

export function insertEvents(tx: Tx, events: NewEvent[], now: number) {
  return insertRows.run(
    tx,
    [
      events.map((e) => e.thingId),
      events.map((e) => e.timestamp),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => (e.waypoint ? JSON.stringify(e.waypoint) : null)),
    ],
    [now],
  );
}
