/**
 * `npm run bench -- export [--events 2000000] [--things 10] [--stores sqlite,postgres] [--analyse]`
 * Exporting one thing's events (NDJSON, src/queries/export.ts, the server's code in this process) right
 * after a bulk load: `events` one-second events of `things` things written through the server's event
 * writer into a new store on each engine, then every event of one thing exported, page by page as a
 * client reading at full speed takes them. On PostgreSQL the events table is not analysed between the
 * load and the export (autovacuum is off for it, as when it has not come round yet), unless `--analyse`:
 * each page's plan then has no statistics to go by (docs/storage.md, "Reading from a position").
 * Measured on each store: events a second over the whole export, and the time of its first, middle
 * and last pages (medians of ten), which are flat when each page reads only its own rows; the baseline
 * is SQLite's rate, same data, same run.
 */
import { sql } from 'kysely';
import { timeFormatter } from '../src/core/time.ts';
import { exportEvents } from '../src/queries/export.ts';
import type { Store } from '../src/store/store.ts';
import { fill, fillableStore, START } from './storage.ts';
import { benchStore, describeMachine, median, option, table } from './support.ts';

/** Pages of each median: the first, middle and last ones. */
const WINDOW = 10;

interface Exported {
  events: number;
  seconds: number;
  /** Each page's time (ms), from the one before it (the first: from the request). */
  pages: number[];
}

export async function run(args: string[]): Promise<void> {
  const total = Number(option(args, 'events', '2000000'));
  const thingCount = Number(option(args, 'things', '10'));
  const engines = option(args, 'stores', 'sqlite,postgres').split(',');
  const analyse = args.includes('--analyse');
  const seconds = Math.ceil(total / thingCount);
  console.log(
    `export: ${thingCount * seconds} events (${thingCount} things x ${seconds} s), one thing's ${seconds} exported${analyse ? ', analysed first' : ', not analysed'}`,
  );
  console.log(describeMachine());
  const results = new Map<string, Exported>();
  for (const engine of engines) {
    const bench = benchStore(engine);
    const filled = await fillableStore(bench, thingCount);
    const { store } = filled;
    try {
      if (store.engine === 'postgres') await sql`alter table events set (autovacuum_enabled = false)`.execute(store.db);
      const started = performance.now();
      await fill(filled, seconds);
      await filled.writer.drain();
      const loaded = (performance.now() - started) / 1000;
      console.log(
        `${engine}: loaded in ${loaded.toFixed(1)} s (${Math.round((thingCount * seconds) / loaded)} events/s)`,
      );
      if (store.engine === 'postgres' && analyse) await sql`analyze events`.execute(store.db);
      // A thing in the middle of the ids: no first or last one. Its whole history, then the same events
      // as a range (`from` and `to` given, as an operator exporting a period does).
      const [, thing] = [...filled.things][Math.floor(thingCount / 2)] as [number, { thing_key: string }];
      const period = { from: START / 1000, to: (START + seconds * 1000) / 1000 };
      for (const [name, bounds] of [
        ['whole history', {}],
        ['range', period],
      ] as const) {
        results.set(`${engine}|${name}`, await exported(store, filled.organisationKey, thing.thing_key, bounds));
      }
    } finally {
      await filled.writer.drain();
      await store.close();
      await bench.dispose();
    }
  }
  const rate = (r: Exported) => r.events / r.seconds;
  // Medians of ten pages at the start, in the middle and at the end: one page's time is noisy here.
  const pagesAt = (r: Exported, at: number) => {
    const from = Math.max(0, Math.min(r.pages.length - WINDOW, Math.floor(at * r.pages.length - WINDOW / 2)));
    return median(r.pages.slice(from, from + WINDOW)).toFixed(1);
  };
  const rows: (string | number)[][] = [
    [
      'store',
      'export',
      'events',
      'events/s',
      'x SQLite',
      'pages',
      'first pages ms',
      'middle pages ms',
      'last pages ms',
    ],
  ];
  for (const [key, r] of results) {
    const [engine, name] = key.split('|') as [string, string];
    const baseline = results.get(`sqlite|${name}`);
    rows.push([
      engine,
      name,
      r.events,
      Math.round(rate(r)),
      baseline ? `${(rate(r) / rate(baseline)).toFixed(2)}x` : '',
      r.pages.length,
      pagesAt(r, 0),
      pagesAt(r, 0.5),
      pagesAt(r, 1),
    ]);
  }
  console.log(table(rows));
  for (const name of ['whole history', 'range']) {
    const [sqlite, postgres] = [results.get(`sqlite|${name}`), results.get(`postgres|${name}`)];
    if (!sqlite || !postgres) continue;
    const ratio = rate(postgres) / rate(sqlite);
    console.log(
      `target (${name}): PostgreSQL at least 0.5x of SQLite's rate: ${ratio >= 0.5 ? 'met' : 'not met'} (${ratio.toFixed(2)}x)`,
    );
  }
}

/** Exports a thing's events (NDJSON), taking each page as it comes; answers the time of each. */
async function exported(
  store: Store,
  organisationKey: string,
  thingKey: string,
  bounds: { from?: number; to?: number },
): Promise<Exported> {
  const began = performance.now();
  const answer = await exportEvents(
    store.db,
    { organisationKeys: [organisationKey], thingKey, format: 'ndjson', ...bounds },
    timeFormatter('int', 'Etc/UTC'),
  );
  const pages: number[] = [];
  let events = 0;
  let last = began;
  for await (const text of answer.body) {
    const now = performance.now();
    pages.push(now - last);
    last = now;
    events += (String(text).match(/\n/g) ?? []).length;
  }
  return { events, seconds: (performance.now() - began) / 1000, pages };
}
