/**
 * `npm run bench -- storage [--store sqlite|postgres] [--things 50] [--seconds 4000] [--compare 1500]`
 * Bytes on disk per stored event, next to the size of the events' JSON text and of their raw row,
 * measured in the same run on the same events: `things` things reporting 3 numeric metrics every
 * second for `seconds` seconds, written through the server's own event writer (rows, index and
 * 15-minute rollups as ingestion writes them) into a store opened and migrated as the server opens it.
 * Then three rounds of ingestion for `compare` ms alone (the baseline) and for as long again while
 * the compactor (src/events/compactor.ts) compacts the first fill's events in the background, as a
 * server's pass does; and the bytes per event once every event is compacted into blocks (docs/storage.md, "The
 * compact event store").
 * Also exports the helpers the `retention` benchmark fills its store with.
 */
import { sql } from 'kysely';
import { EventCompactor } from '../src/events/compactor.ts';
import { EventWriter, type IngestBatch, type SubjectThing } from '../src/events/writer.ts';
import { provisionOrganisation } from '../src/organisations/service.ts';
import { reclaimFreePages } from '../src/store/dialect.ts';
import { openStore, type Store } from '../src/store/store.ts';
import { type BenchStore, benchStore, describeMachine, option, table } from './support.ts';

/** 2026-01-01 00:00 UTC. */
export const START = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;

/** Three numeric readings, varying as a machine's do. */
export const readings = (i: number) => ({
  temperature: Math.round((20 + 15 * Math.sin(i / 90) + (i % 7) / 10) * 100) / 100,
  pressure: Math.round((1 + (i % 13) / 20) * 1000) / 1000,
  rpm: 900 + (i % 400),
});

const METRICS = JSON.stringify(
  ['temperature', 'pressure', 'rpm'].map((name) => ({ name, data_type: 'number', unit: '' })),
);

export interface FilledStore {
  store: Store;
  writer: EventWriter;
  organisationKey: string;
  /** Thing ids, and each thing as the writer checks its batches. */
  things: Map<number, SubjectThing>;
  /** One batch of every thing's events from second `from` for `seconds` seconds (each at START + second, plus `offset` ms). */
  batch(from: number, seconds: number, offset?: number): IngestBatch;
}

/** Opens a new store as the server does, with an organisation, a template of 3 metrics and `count` things. */
export async function fillableStore(bench: BenchStore, count: number): Promise<FilledStore> {
  const store = await openStore({
    databaseUrl: bench.databaseUrl,
    schema: bench.engine === 'postgres' ? bench.schema : undefined,
  });
  const { organisation } = await provisionOrganisation(store.db, { name: 'bench', isOem: true, parentKey: null });
  const template = await store.db
    .selectFrom('thing_templates')
    .select('thing_template_key')
    .where('organisation_key', '=', organisation.organisation_key)
    .executeTakeFirstOrThrow();
  await store.db
    .updateTable('thing_templates')
    .set({ metrics: METRICS })
    .where('thing_template_key', '=', template.thing_template_key)
    .execute();
  const things = new Map<number, SubjectThing>();
  for (let i = 0; i < count; i++) {
    const key = `bench-${i}`;
    const row = await store.db
      .insertInto('things')
      .values({
        thing_key: key,
        organisation_key: organisation.organisation_key,
        thing_template_key: template.thing_template_key,
        name: key,
        created_at: START,
        updated_at: START,
      } as never)
      .returning('thing_id')
      .executeTakeFirstOrThrow();
    things.set(Number(row.thing_id), {
      thing_key: key,
      thing_template_key: template.thing_template_key,
      metrics: METRICS,
    });
  }
  const writer = new EventWriter(store, { maxPendingRows: 1_000_000 });
  const batch = (from: number, seconds: number, offset = 0): IngestBatch => {
    const events: IngestBatch['events'] = [];
    for (let s = from; s < from + seconds; s++) {
      for (const thingId of things.keys()) {
        events.push({ thingId, timestamp: START + s * 1000 + offset, data: readings(s + thingId), waypoint: null });
      }
    }
    return { events, subject: { organisationKey: organisation.organisation_key, things } };
  };
  return { store, writer, organisationKey: organisation.organisation_key, things, batch };
}

/** Writes `seconds` seconds of every thing's events through the writer, about 1,000 events a transaction. */
export async function fill(filled: FilledStore, seconds: number, from = 0): Promise<void> {
  const perBatch = Math.max(1, Math.floor(1000 / filled.things.size));
  const writes: Promise<number>[] = [];
  for (let s = from; s < from + seconds; s += perBatch) {
    writes.push(filled.writer.write(filled.batch(s, Math.min(perBatch, from + seconds - s))));
    if (writes.length >= 8) await writes.shift();
  }
  await Promise.all(writes);
}

/** Bytes on disk of the events table, its indexes, the event blocks (with theirs), and the rollups. */
async function sizes(
  store: Store,
  /** PostgreSQL: rewrite the events table first, so it no longer holds the space of the rows deleted. */
  rewrite = false,
): Promise<{ rows: number; index: number; blocks: number; rollups: number; file: number }> {
  if (store.engine === 'sqlite') {
    // Free pages (of rows compacted) back to the file system first, as the sweeper does.
    while ((await reclaimFreePages(store.db, 4096)) > 0);
    await sql`pragma wal_checkpoint(truncate)`.execute(store.db);
    const of = async (names: string[]) =>
      Number(
        (
          await sql<{
            bytes: number;
          }>`select coalesce(sum(pgsize), 0) as bytes from dbstat where name in (${sql.join(names)})`.execute(store.db)
        ).rows[0]?.bytes,
      );
    const [pages] = (
      await sql<{ n: number }>`select page_count * page_size as n from pragma_page_count(), pragma_page_size()`.execute(
        store.db,
      )
    ).rows;
    return {
      rows: await of(['events']),
      index: await of(['events_thing_timestamp']),
      blocks: await of(['event_blocks', 'event_blocks_thing_min', 'event_blocks_thing_max']),
      rollups: await of(['event_rollups', 'sqlite_autoindex_event_rollups_1']),
      file: Number(pages?.n),
    };
  }
  await sql`vacuum ${sql.raw(rewrite ? 'full ' : '')}analyze events`.execute(store.db);
  await sql`vacuum analyze event_blocks`.execute(store.db);
  const size = async (text: string) =>
    Number((await sql<{ n: string }>`select ${sql.raw(text)} as n`.execute(store.db)).rows[0]?.n);
  return {
    rows: await size(`pg_table_size('events')`),
    index: await size(`pg_indexes_size('events')`),
    blocks: await size(`pg_total_relation_size('event_blocks')`),
    rollups: await size(`pg_total_relation_size('event_rollups')`),
    file: await size(
      "(select sum(pg_total_relation_size(c.oid)) from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema() and c.relkind = 'r')",
    ),
  };
}

/**
 * Writes events from second `from` on, eight transactions of about 1,000 events under way at a time
 * (as `fill` does), for at least `ms` and until `until()` says so; answers the seconds written and the
 * events written per second.
 */
async function ingestFor(filled: FilledStore, from: number, ms: number, until: () => boolean = () => true) {
  const step = Math.max(1, Math.floor(1000 / filled.things.size)) * 8;
  const started = performance.now();
  let second = from;
  while (performance.now() - started < ms || !until()) {
    await fill(filled, step, second);
    second += step;
  }
  const elapsed = (performance.now() - started) / 1000;
  return { seconds: second - from, rate: ((second - from) * filled.things.size) / elapsed };
}

export async function run(args: string[]): Promise<void> {
  const engine = option(args, 'store', 'sqlite');
  const thingCount = Number(option(args, 'things', '50'));
  const seconds = Number(option(args, 'seconds', '4000'));
  const compare = Number(option(args, 'compare', '1500'));
  const bench = benchStore(engine);
  console.log(`storage: ${engine}, ${thingCount} things x ${seconds} one-second events, 3 numeric metrics`);
  console.log(describeMachine());
  const filled = await fillableStore(bench, thingCount);
  try {
    const started = performance.now();
    await fill(filled, seconds);
    const written = thingCount * seconds;
    const wrote = (performance.now() - started) / 1000;
    // The same events as text: each event's JSON (as the export writes it) and its raw row (four
    // 8-byte integers: id, thing, event time, receipt time; and the data's JSON text).
    const text = (from: number, to: number) => {
      let json = 0;
      let raw = 0;
      for (let s = from; s < to; s++) {
        for (const thingId of filled.things.keys()) {
          const data = JSON.stringify(readings(s + thingId));
          json += `{"timestamp":${START + s * 1000},"data":${data}}`.length;
          raw += 32 + data.length;
        }
      }
      return { json, raw };
    };
    const { json, raw } = text(0, seconds);
    const size = await sizes(filled.store);
    const perEvent = (bytes: number, events = written) => (bytes / events).toFixed(1);
    const onDisk = size.rows + size.index + size.rollups;
    console.log(`wrote ${written} events in ${wrote.toFixed(1)} s (${Math.round(written / wrote)}/s)`);
    console.log(
      table([
        ['bytes per event', 'value', 'x JSON', 'x raw row'],
        ['events JSON (baseline)', perEvent(json), '1.00', (json / raw).toFixed(2)],
        ['raw row (baseline)', perEvent(raw), (raw / json).toFixed(2), '1.00'],
        ['table rows', perEvent(size.rows), (size.rows / json).toFixed(2), (size.rows / raw).toFixed(2)],
        ['(thing, time) index', perEvent(size.index), (size.index / json).toFixed(2), (size.index / raw).toFixed(2)],
        [
          '15-minute rollups',
          perEvent(size.rollups),
          (size.rollups / json).toFixed(2),
          (size.rollups / raw).toFixed(2),
        ],
        ['on disk: rows + index + rollups', perEvent(onDisk), (onDisk / json).toFixed(2), (onDisk / raw).toFixed(2)],
        [
          engine === 'sqlite' ? 'whole file' : 'whole database',
          perEvent(size.file),
          (size.file / json).toFixed(2),
          (size.file / raw).toFixed(2),
        ],
      ]),
    );

    // Ingestion alone, then while the compactor compacts the events of the first fill in the background,
    // as a server's first pass after an upgrade does, until it has compacted them.
    // Rounds of ingestion alone and while a compactor compacts the first fill's events in the
    // background (a new one each round goes on where the last stopped), medians compared.
    let from = seconds;
    const alone: number[] = [];
    const beside: number[] = [];
    let compactedMeanwhile = 0;
    let throughout = true;
    for (let round = 0; round < 3; round++) {
      const quiet = await ingestFor(filled, from, compare);
      from += quiet.seconds;
      alone.push(quiet.rate);
      // Its cut: the events of the first fill's whole hours.
      const compactor = new EventCompactor(filled.store, { ageMs: HOUR, now: () => START + seconds * 1000 + HOUR });
      let compacting = true;
      const background = compactor.compact().finally(() => {
        compacting = false;
      });
      const busy = await ingestFor(filled, from, compare);
      from += busy.seconds;
      beside.push(busy.rate);
      throughout &&= compacting;
      await compactor.stop();
      compactedMeanwhile += await background;
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[1] as number;
    console.log(
      table([
        ['ingestion, median of 3 rounds', 'events/s', 'x alone'],
        ['alone (baseline)', String(Math.round(median(alone))), '1.00'],
        [
          `while compacting (${compactedMeanwhile} events compacted${throughout ? ', compacting throughout' : ''})`,
          String(Math.round(median(beside))),
          (median(beside) / median(alone)).toFixed(2),
        ],
      ]),
    );

    // Every event into blocks, at full speed, then the bytes on disk again.
    const total = from * thingCount;
    const all = text(0, from);
    const compactStarted = performance.now();
    const compacted = await new EventCompactor(filled.store, { ageMs: 0, share: 1 }).compact();
    const compactTime = (performance.now() - compactStarted) / 1000;
    // PostgreSQL keeps the space of deleted rows for new ones: measured as it is, and rewritten.
    const kept = engine === 'postgres' ? await sizes(filled.store) : undefined;
    const after = await sizes(filled.store, true);
    const stored = after.rows + after.index + after.blocks + after.rollups;
    console.log(
      `${total} events stored; compacted the ${compacted} left at full speed in ${compactTime.toFixed(1)} s (${Math.round(compacted / compactTime)}/s)`,
    );
    console.log(
      table([
        ['bytes per event, compacted', 'value', 'x JSON', 'x raw row'],
        ['events JSON (baseline)', perEvent(all.json, total), '1.00', (all.json / all.raw).toFixed(2)],
        ['raw row (baseline)', perEvent(all.raw, total), (all.raw / all.json).toFixed(2), '1.00'],
        [
          'event blocks (with their indexes)',
          perEvent(after.blocks, total),
          (after.blocks / all.json).toFixed(3),
          (after.blocks / all.raw).toFixed(3),
        ],
        [
          'rows and index left',
          perEvent(after.rows + after.index, total),
          ((after.rows + after.index) / all.json).toFixed(3),
          ((after.rows + after.index) / all.raw).toFixed(3),
        ],
        [
          '15-minute rollups',
          perEvent(after.rollups, total),
          (after.rollups / all.json).toFixed(3),
          (after.rollups / all.raw).toFixed(3),
        ],
        [
          'on disk: blocks + rows + index + rollups',
          perEvent(stored, total),
          (stored / all.json).toFixed(3),
          (stored / all.raw).toFixed(3),
        ],
        ...(kept
          ? [
              [
                'rows and index left, before VACUUM FULL events',
                perEvent(kept.rows + kept.index, total),
                ((kept.rows + kept.index) / all.json).toFixed(3),
                ((kept.rows + kept.index) / all.raw).toFixed(3),
              ],
            ]
          : []),
        [
          engine === 'sqlite' ? 'whole file' : 'whole database',
          perEvent(after.file, total),
          (after.file / all.json).toFixed(3),
          (after.file / all.raw).toFixed(3),
        ],
      ]),
    );
  } finally {
    await filled.writer.drain();
    await filled.store.close();
    await bench.dispose();
  }
}
