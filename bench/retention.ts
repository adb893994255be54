/**
 * `npm run bench -- retention [--store sqlite|postgres] [--things 100] [--seconds 10000] [--rounds 100] [--compacted]`
 * Expiring many events (`things` x `seconds` one-second events, all older than the retention) with the
 * server's own sweeper (src/events/sweeper.ts), in the server's code in this process. With
 * `--compacted`, every filled event is compacted into blocks first by the server's compactor
 * (src/events/compactor.ts), as a server's events are once a day old: the steady state, where the
 * sweeper drops a PostgreSQL partition or deletes blocks on SQLite (docs/storage.md). Measured:
 * - blocking: the longest turn the sweeper takes among the event writer's transactions (ingestion waits
 *   that long at most), and the whole sweep; on SQLite the file's size before and after;
 * - ingestion stall: while the sweep runs, a batch of one event per thing is written every 20 ms
 *   through the event writer; each write's time from hand-over to commit, next to the same writes
 *   measured just before without a sweep (the baseline);
 * - queries: `thing_data` (the newest 100 events) and `thing_aggregated_data` (30 days of one-minute
 *   events in 15-minute buckets) of a thing with kept events, p99 of `rounds` requests, under the
 *   retention after the sweep, next to the same requests without a retention before it (each series after
 *   a few rounds not counted, in which the code is compiled and caches fill).
 */
import { sql } from 'kysely';
import { timeFormatter } from '../src/core/time.ts';
import { EventCompactor } from '../src/events/compactor.ts';
import { RetentionSweeper } from '../src/events/sweeper.ts';
import { aggregatedData } from '../src/queries/aggregation.ts';
import { thingData } from '../src/queries/thing-data.ts';
import type { Store } from '../src/store/store.ts';
import { fill, fillableStore, readings } from './storage.ts';
import { benchStore, describeMachine, latency, option, quantile, table } from './support.ts';

const DAY = 86_400_000;
const MINUTE = 60_000;

export async function run(args: string[]): Promise<void> {
  const engine = option(args, 'store', 'sqlite');
  const thingCount = Number(option(args, 'things', '100'));
  const seconds = Number(option(args, 'seconds', '10000'));
  const rounds = Number(option(args, 'rounds', '100'));
  const compacted = args.includes('--compacted');
  const expiring = thingCount * seconds;
  const bench = benchStore(engine);
  console.log(
    `retention: ${engine}, ${expiring} events to expire (${thingCount} things x ${seconds} s)${compacted ? ', compacted into blocks' : ''}`,
  );
  console.log(describeMachine());
  const filled = await fillableStore(bench, thingCount);
  const { store, writer } = filled;
  try {
    let started = performance.now();
    await fill(filled, seconds);
    console.log(`filled in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    if (compacted) {
      started = performance.now();
      const moved = await new EventCompactor(store, { ageMs: 0 }).compactThings(filled.things.keys());
      console.log(`compacted ${moved} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    // One thing with 30 days of one-minute events up to now: kept, and queried.
    const now = Date.now();
    const [queriedId, queried] = [...filled.things][0] as [number, { thing_key: string }];
    const recent = Array.from({ length: 30 * 1440 }, (_, i) => ({
      thingId: queriedId,
      timestamp: now - 30 * DAY + i * MINUTE,
      data: readings(i),
      waypoint: null,
    }));
    for (let i = 0; i < recent.length; i += 1000) {
      await writer.write({ events: recent.slice(i, i + 1000), subject: filled.batch(0, 0).subject });
    }
    const queries = await measureQueries(store, filled.organisationKey, queried.thing_key, now, rounds);

    // Baseline: ingestion without a sweep, for as long as the sweep is expected to take (at most 10 s).
    const writes = (until: () => boolean) => ingest(filled, until);
    const baselineEnd = performance.now() + 5000;
    const baseline = await writes(() => performance.now() > baselineEnd);

    await store.db
      .updateTable('organisations')
      .set({ retention_days: 60 })
      .where('organisation_key', '=', filled.organisationKey)
      .execute();
    // Each turn the sweeper takes among the writer's transactions: ingestion waits for one at most.
    const turns: number[] = [];
    const sweeper = new RetentionSweeper(store, {
      turn: (work) =>
        writer.turn(async () => {
          const began = performance.now();
          try {
            return await work();
          } finally {
            turns.push(performance.now() - began);
          }
        }),
    });
    const fileBefore = await fileBytes(store);
    started = performance.now();
    let sweeping = true;
    const [swept, during] = await Promise.all([
      sweeper.sweep().finally(() => {
        sweeping = false;
      }),
      writes(() => !sweeping),
    ]);
    const sweepSeconds = (performance.now() - started) / 1000;
    const after = await measureQueries(store, filled.organisationKey, queried.thing_key, now, rounds);
    const left = await store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();

    console.log(
      `swept ${swept.events} events (${swept.partitions} partitions dropped) and ${swept.rollups} rollup slots in ${sweepSeconds.toFixed(1)} s (${Math.round(swept.events / sweepSeconds)}/s), ${turns.length} turns; ${Number(left.n)} events left as rows, ${await blockEvents(store)} in blocks`,
    );
    console.log(
      table([
        ['', 'baseline', 'measured', 'ratio'],
        ['longest sweep turn (blocking), ms', '-', quantile(turns, 1).toFixed(1), '-'],
        ['sweep turns p99, ms', '-', quantile(turns, 0.99).toFixed(1), '-'],
        [
          'ingestion write, max ms (no sweep / sweeping)',
          quantile(baseline, 1).toFixed(1),
          quantile(during, 1).toFixed(1),
          `${(quantile(during, 1) / quantile(baseline, 1)).toFixed(2)}x`,
        ],
        [
          'ingestion write p99, ms (no sweep / sweeping)',
          quantile(baseline, 0.99).toFixed(1),
          quantile(during, 0.99).toFixed(1),
          `${(quantile(during, 0.99) / quantile(baseline, 0.99)).toFixed(2)}x`,
        ],
        [
          'thing_data newest 100, p99 ms (no retention / after)',
          quantile(queries.newest, 0.99).toFixed(1),
          quantile(after.newest, 0.99).toFixed(1),
          `${(quantile(after.newest, 0.99) / quantile(queries.newest, 0.99)).toFixed(2)}x`,
        ],
        [
          '30 days in 15-min buckets, p99 ms (no retention / after)',
          quantile(queries.aggregated, 0.99).toFixed(1),
          quantile(after.aggregated, 0.99).toFixed(1),
          `${(quantile(after.aggregated, 0.99) / quantile(queries.aggregated, 0.99)).toFixed(2)}x`,
        ],
      ]),
    );
    console.log(`ingestion writes: ${latency(baseline)} without a sweep, ${latency(during)} while sweeping`);
    console.log(
      `thing_data newest 100: ${latency(queries.newest)} without a retention, ${latency(after.newest)} after`,
    );
    console.log(
      `30 days in 15-min buckets: ${latency(queries.aggregated)} without a retention, ${latency(after.aggregated)} after`,
    );
    if (swept.partitions > 0) {
      // The sweep drops the partitions first, a turn each.
      const drops = turns.slice(0, swept.partitions).map((t) => t.toFixed(1));
      console.log(`partition drops (their turns): ${drops.join(', ')} ms`);
    }
    if (store.engine === 'sqlite') {
      const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
      console.log(`file: ${mib(fileBefore)} MiB before the sweep, ${mib(await fileBytes(store))} MiB after`);
      const [free] = (
        await sql<{ n: number }>`select freelist_count as n from pragma_freelist_count()`.execute(store.db)
      ).rows;
      console.log(`free pages left in the file: ${free?.n}`);
    }
  } finally {
    await writer.drain();
    await store.close();
    await bench.dispose();
  }
}

/** Events held in blocks. */
async function blockEvents(store: Store): Promise<number> {
  const row = await store.db
    .selectFrom('event_blocks')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('event_count'), eb.lit(0)).as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A SQLite file's size in bytes, its write-ahead log copied in first; NaN on PostgreSQL. */
async function fileBytes(store: Store): Promise<number> {
  if (store.engine !== 'sqlite') return Number.NaN;
  await sql`pragma wal_checkpoint(truncate)`.execute(store.db);
  const [size] = (
    await sql<{ n: number }>`select page_count * page_size as n from pragma_page_count(), pragma_page_size()`.execute(
      store.db,
    )
  ).rows;
  return Number(size?.n);
}

/** Writes one event per thing every 20 ms until `until()`; answers each write's time to commit (ms). */
async function ingest(filled: Awaited<ReturnType<typeof fillableStore>>, until: () => boolean): Promise<number[]> {
  const times: number[] = [];
  let second = 0;
  while (!until()) {
    const batch = filled.batch(0, 1, Date.now() - Date.UTC(2026, 0, 1) + second++);
    const began = performance.now();
    await filled.writer.write(batch);
    times.push(performance.now() - began);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return times;
}

/** Rounds run before those measured: the first calls compile the code they run and fill the caches. */
const WARM_UP_ROUNDS = 5;

async function measureQueries(store: Store, organisationKey: string, thingKey: string, now: number, rounds: number) {
  const time = timeFormatter('int', 'Etc/UTC');
  // The tables as PostgreSQL's autovacuum leaves them within minutes of the fill, the compaction or the
  // sweep: statistics up to date (docs/storage.md, "Indexes") and the deleted rows' space marked free.
  // Measured while it works instead, the queries share the two cores with its vacuum of the 10 million
  // rows a bulk compaction deletes at once, which a server's compactor deletes an hour at a time.
  if (store.engine === 'postgres') await sql`vacuum analyze`.execute(store.db);
  const newest: number[] = [];
  const aggregated: number[] = [];
  for (let i = -WARM_UP_ROUNDS; i < rounds; i++) {
    let began = performance.now();
    await thingData(
      store.db,
      {
        organisationKeys: [organisationKey],
        thingKey,
        page: 1,
        per: 100,
        order: 'desc',
        dataFormat: 'map',
        byCreatedAt: false,
      },
      time,
    );
    newest.push(performance.now() - began);
    began = performance.now();
    await aggregatedData(
      store.db,
      {
        organisationKeys: [organisationKey],
        thingKeys: [thingKey],
        grouping: 'minute',
        groupingValue: 15,
        idle: false,
        from: Math.floor((now - 30 * DAY) / 1000),
        to: Math.floor(now / 1000),
      },
      time,
    );
    aggregated.push(performance.now() - began);
  }
  return { newest: newest.slice(WARM_UP_ROUNDS), aggregated: aggregated.slice(WARM_UP_ROUNDS) };
}
