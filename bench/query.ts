/**
 * `npm run bench -- query [--things 1000] [--events 10000] [--requests 300] [--rounds 20]`
 * Data queries over a large store, each figure next to a baseline measured in the same run: the same
 * SQL the server runs, executed straight on the store.
 * - thing_data: the newest 100 events of one thing (the server reads one page and the event count kept on the thing), p50/p99
 *   of sequential requests.
 * - thing_data with `query_by_created_at`: the newest 100 of the events that arrived in the last day.
 * - thing_aggregated_data: 30 days of one-minute data of one thing (43,200 events, 3 metrics) in
 *   15-minute buckets in Asia/Kolkata, median of sequential requests.
 * The data (1,000 things x 10,000 one-minute events by default, plus the 43,200 events of the
 * aggregated thing) is generated once into .bench/ and reused by later runs with the same sizes.
 * `--store postgres` keeps its data in a schema of its own in the test database.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { metricPaths, SLOT_MS, SlotCounter } from '../src/events/rollups.ts';
import { buildServer, cpuSeconds, describeMachine, median, option, startChildServer, table } from './support.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'bench@example.com', THINGBASE_ADMIN_PASSWORD: 'benchmark password' };
const DAY = 86_400_000;
/** 2026-10-01 00:00 in Asia/Kolkata. */
const START = Date.UTC(2026, 8, 30, 18, 30);
const AGGREGATED_EVENTS = 43_200;

const readings = (i: number) => ({
  temperature: Math.round((20 + 15 * Math.sin(i / 90) + (i % 7) / 10) * 100) / 100,
  pressure: Math.round((1 + (i % 13) / 20) * 1000) / 1000,
  rpm: 900 + (i % 400),
});
const METRICS = JSON.stringify(
  ['temperature', 'pressure', 'rpm'].map((name) => ({ name, data_type: 'number', unit: '' })),
);

/** The slot rollups the server keeps with the events (src/events/rollups.ts), of one thing's events from `from`. */
function rollupsOf(thingId: number, from: number, count: number) {
  const counter = new SlotCounter();
  const metrics = metricPaths(METRICS);
  for (let i = from; i < from + count; i++) counter.add(thingId, metrics, START + i * 60_000, readings(i));
  return counter.rows();
}

/** Makes the store: the server's own first start (schema, organisation), then rows written in bulk. */
async function generate(path: string, things: number, events: number): Promise<void> {
  const partial = `${path}.partial`;
  rmSync(partial, { force: true });
  const server = await startChildServer('thingbase-compiled.mjs', {
    ...ADMIN,
    DATABASE_URL: `sqlite:${partial}`,
    MQTT_PORT: '0',
  });
  await server.stop();
  const db = new BetterSqlite3(partial);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const template = db
    .prepare("select organisation_key, thing_template_key from thing_templates where name = 'Default'")
    .get() as { organisation_key: string; thing_template_key: string };
  db.prepare('update thing_templates set metrics = ? where thing_template_key = ?').run(
    METRICS,
    template.thing_template_key,
  );
  // Events are written as received when they happened: arrival lags of 0 (migration 007).
  const insertThing = db.prepare(
    `insert into things (thing_key, organisation_key, thing_template_key, name, description, tags, coordinates,
       bi_directional, user_defined_properties, created_at, updated_at, arrival_lag_min, arrival_lag_max)
     values (?, ?, ?, ?, '', '[]', null, 0, '{}', ?, ?, 0, 0)`,
  );
  const insertEvent = db.prepare('insert into events (thing_id, timestamp, created_at, data) values (?, ?, ?, ?)');
  const insertRollup = db.prepare('insert into event_rollups (thing_id, slot, stats) values (?, ?, ?)');
  const started = performance.now();
  let written = 0;
  const writeThing = db.transaction((key: string) => {
    insertThing.run(key, template.organisation_key, template.thing_template_key, key, START, START);
    return Number((db.prepare('select last_insert_rowid() as id').get() as { id: number }).id);
  });
  const writeEvents = db.transaction((thingId: number, from: number, count: number) => {
    for (let i = from; i < from + count; i++) {
      const at = START + i * 60_000;
      insertEvent.run(thingId, at, at, JSON.stringify(readings(i)));
    }
  });
  const countEvents = db.prepare('update things set event_count = ? where thing_id = ?');
  // What the server's writer keeps with the events: slot rollups and the thing's event count.
  const writeRollups = db.transaction((thingId: number, count: number) => {
    for (const r of rollupsOf(thingId, 0, count)) insertRollup.run(thingId, r.slot, JSON.stringify(r.stats));
    countEvents.run(count, thingId);
  });
  for (let t = 0; t < things; t++) {
    const thingId = writeThing(`q-${t}`);
    const count = t === 0 ? Math.max(events, AGGREGATED_EVENTS) : events;
    for (let i = 0; i < count; i += 1000) writeEvents(thingId, i, Math.min(1000, count - i));
    writeRollups(thingId, count);
    written += count;
    if (t % 100 === 99) {
      const seconds = (performance.now() - started) / 1000;
      console.log(`  ${t + 1} things, ${written} events, ${Math.round(written / seconds)} rows/s`);
    }
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  renameSync(partial, path);
}

/** The same SQL the server runs, executed straight on the store: the benchmark's baselines. */
interface DirectStore {
  thingId(key: string): Promise<number>;
  /** thing_data's statement: the newest 100 rows with the thing's event count (kept on the thing). */
  newestPage(thingId: number): Promise<void>;
  /**
   * thing_data's statement with `query_by_created_at` and a `from`: the newest 100 rows by arrival
   * with their count, read through the event-time index within the thing's arrival lags.
   */
  arrivalPage(thingId: number, from: number): Promise<void>;
  /**
   * The aggregation's reads: the range's whole 15-minute slots from their rollups, and the events of
   * the partial slots at its ends in chunks of 20,000, each as one text of JSON rows.
   */
  aggregationReads(thingId: number, from: number, to: number): Promise<void>;
  /** Every event of the range read as the aggregation reads partial slots: what it read before rollups. */
  eventReads(thingId: number, from: number, to: number): Promise<void>;
  /**
   * The answer's numbers computed by the engine alone from the events: one GROUP BY over the range in
   * 15-minute buckets (Asia/Kolkata's are UTC's, offset 5:30), count, sum, min, max and avg of each
   * metric. What a user with the database and no Thingbase would run.
   */
  groupedSql(thingId: number, from: number, to: number): Promise<number>;
  close(): Promise<void>;
}

const CHUNK = 20_000;
const KEYSET = ' and (timestamp > $4 or (timestamp = $5 and event_id > $6))';
const chunkSql = (rowsText: string, keyset: string) =>
  `select count(*), max(page.timestamp), max(page.event_id), ${rowsText} from (select timestamp, event_id, data from events where thing_id = $1 and timestamp >= $2 and timestamp <= $3${keyset} order by timestamp asc, event_id asc limit ${CHUNK}) as page`;
const sqliteSql = (text: string) => text.replace(/\$\d+/g, '?');
const BENCH_METRICS = ['temperature', 'pressure', 'rpm'];
/**
 * `metric(name)` is the engine's expression for a metric's number in `data`. The inner query's empty
 * LIMIT/OFFSET keeps either engine from merging it into the outer one, where it would read each
 * metric out of the JSON once per aggregate: fenced, SQLite takes about half the time, PostgreSQL a
 * fifth.
 */
const groupedSql = (metric: (name: string) => string, bucket: string, fence: string) =>
  `select ${bucket} as bucket, ${BENCH_METRICS.map((m) => ['count', 'sum', 'min', 'max', 'avg'].map((f) => `${f}(${m})`).join(', ')).join(', ')}
   from (select timestamp, ${BENCH_METRICS.map((m) => `${metric(m)} as ${m}`).join(', ')}
         from events where thing_id = $1 and timestamp >= $2 and timestamp <= $3 ${fence}) as e
   group by bucket order by bucket`;
const PAGE_SQL =
  'select timestamp, data, (select event_count from things where thing_id = $1) as total from events where thing_id = $2 order by timestamp desc, event_id desc limit 100 offset 0';
const arrived = (thing: string, from: string) =>
  `thing_id = ${thing} and timestamp >= ${from} - (select arrival_lag_max from things where thing_id = ${thing}) and created_at >= ${from}`;
const arrivalSql = (thing: string, from: string) =>
  `select timestamp, data, (select count(*) from events where ${arrived(thing, from)}) as total from events where ${arrived(thing, from)} order by created_at desc, event_id desc limit 100 offset 0`;
const rollupSql = (rowsText: string) =>
  `select ${rowsText} from (select slot, stats from event_rollups where thing_id = $1 and slot >= $2 and slot < $3 order by slot) as r`;

/** What the server reads from rollups and what event by event: the whole slots and the partial ends. */
function aggregationParts(from: number, to: number) {
  const first = Math.ceil(from / SLOT_MS) * SLOT_MS;
  const end = Math.floor((to + 1) / SLOT_MS) * SLOT_MS;
  const ends: [number, number][] = [];
  if (from < first) ends.push([from, first - 1]);
  if (to + 1 > end) ends.push([end, to]);
  return { first, end, ends };
}

function sqliteDirect(path: string): DirectStore {
  const db = new BetterSqlite3(path, { readonly: true });
  const page = db.prepare(sqliteSql(PAGE_SQL));
  const arrival = db.prepare(arrivalSql('?', '?'));
  const rowsText = "group_concat('[' || page.timestamp || ',' || page.event_id || ',' || page.data || ']', ',')";
  const first = db.prepare(sqliteSql(chunkSql(rowsText, ''))).raw(true);
  const next = db.prepare(sqliteSql(chunkSql(rowsText, KEYSET))).raw(true);
  const rollups = db
    .prepare(sqliteSql(rollupSql("group_concat('[' || r.slot || ',' || r.stats || ']', ',')")))
    .raw(true);
  const grouped = db.prepare(
    sqliteSql(
      groupedSql(
        (m) => `json_extract(data, '$.${m}')`,
        `(timestamp - cast($4 as integer)) / ${15 * 60_000}`,
        'limit -1 offset 0',
      ),
    ),
  );
  const events = (id: number, from: number, to: number) => {
    let [n, at, last] = first.get(id, from, to) as number[];
    while (n === CHUNK) [n, at, last] = next.get(id, from, to, at, at, last) as number[];
  };
  return {
    thingId: async (key) =>
      (db.prepare('select thing_id from things where thing_key = ?').get(key) as { thing_id: number }).thing_id,
    newestPage: async (id) => {
      page.all(id, id);
    },
    arrivalPage: async (id, from) => {
      arrival.all(id, from, id, from, id, from, id, from);
    },
    aggregationReads: async (id, from, to) => {
      const parts = aggregationParts(from, to);
      rollups.get(id, parts.first, parts.end);
      for (const [start, end] of parts.ends) events(id, start, end);
    },
    eventReads: async (id, from, to) => events(id, from, to),
    // `?` are numbered in order of appearance: the bucket's $4 comes first.
    groupedSql: async (id, from, to) => grouped.all(from, id, from, to).length,
    close: async () => {
      db.close();
    },
  };
}

async function postgresDirect(url: string, schema: string): Promise<DirectStore> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  const rowsText =
    "string_agg('[' || page.timestamp || ',' || page.event_id || ',' || page.data || ']', ',' order by page.timestamp, page.event_id)";
  const number = (v: unknown) => Number(v);
  const events = async (id: number, from: number, to: number) => {
    const read = async (keyset: unknown[]) => {
      const text = chunkSql(rowsText, keyset.length > 0 ? KEYSET : '');
      const result = await client.query({ text, values: [id, from, to, ...keyset], rowMode: 'array' });
      return (result.rows[0] as unknown[]).map(number);
    };
    let [n, at, last] = await read([]);
    while (n === CHUNK) [n, at, last] = await read([at, at, last]);
  };
  return {
    thingId: async (key) =>
      number((await client.query('select thing_id from things where thing_key = $1', [key])).rows[0].thing_id),
    newestPage: async (id) => {
      await client.query({ name: 'page', text: PAGE_SQL, values: [id, id] });
    },
    arrivalPage: async (id, from) => {
      await client.query({ name: 'arrival', text: arrivalSql('$1', '$2'), values: [id, from] });
    },
    aggregationReads: async (id, from, to) => {
      const parts = aggregationParts(from, to);
      await client.query({
        text: rollupSql("string_agg('[' || r.slot || ',' || r.stats || ']', ',' order by r.slot)"),
        values: [id, parts.first, parts.end],
      });
      for (const [start, end] of parts.ends) await events(id, start, end);
    },
    eventReads: (id, from, to) => events(id, from, to),
    groupedSql: async (id, from, to) => {
      const text = groupedSql(
        (m) => `(data::jsonb ->> '${m}')::float8`,
        `floor((timestamp - $4) / ${15 * 60_000}::float8)`,
        'offset 0',
      );
      return (await client.query({ text, values: [id, from, to, from], rowMode: 'array' })).rows.length;
    },
    close: () => client.end(),
  };
}

/** The same data on PostgreSQL, in a schema of its own kept for later runs (marked complete at the end). */
async function generatePostgres(url: string, schema: string, things: number, events: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
    const server = await startChildServer('thingbase-compiled.mjs', {
      ...ADMIN,
      DATABASE_URL: url,
      DATABASE_SCHEMA: schema,
      MQTT_PORT: '0',
    });
    await server.stop();
    await client.query(`set search_path to ${schema}`);
    const template = (
      await client.query("select organisation_key, thing_template_key from thing_templates where name = 'Default'")
    ).rows[0] as { organisation_key: string; thing_template_key: string };
    await client.query('update thing_templates set metrics = $1 where thing_template_key = $2', [
      METRICS,
      template.thing_template_key,
    ]);
    const started = performance.now();
    let written = 0;
    for (let t = 0; t < things; t++) {
      const key = `q-${t}`;
      const inserted = await client.query(
        `insert into things (thing_key, organisation_key, thing_template_key, name, description, tags, coordinates,
           bi_directional, user_defined_properties, created_at, updated_at, arrival_lag_min, arrival_lag_max)
         values ($1, $2, $3, $1, '', '[]', null, 0, '{}', $4, $4, 0, 0) returning thing_id`,
        [key, template.organisation_key, template.thing_template_key, START],
      );
      const thingId = Number(inserted.rows[0].thing_id);
      const count = t === 0 ? Math.max(events, AGGREGATED_EVENTS) : events;
      for (let i = 0; i < count; i += 5000) {
        const n = Math.min(5000, count - i);
        const times = Array.from({ length: n }, (_, k) => START + (i + k) * 60_000);
        await client.query(
          'insert into events (thing_id, timestamp, created_at, data) select $1, t, t, d from unnest($2::bigint[], $3::text[]) as u(t, d)',
          [thingId, times, times.map((_, k) => JSON.stringify(readings(i + k)))],
        );
      }
      await client.query('update things set event_count = $1 where thing_id = $2', [count, thingId]);
      const rollups = rollupsOf(thingId, 0, count);
      await client.query(
        'insert into event_rollups (thing_id, slot, stats) select $1, s, t from unnest($2::bigint[], $3::text[]) as u(s, t)',
        [thingId, rollups.map((r) => r.slot), rollups.map((r) => JSON.stringify(r.stats))],
      );
      written += count;
      if (t % 100 === 99) {
        const seconds = (performance.now() - started) / 1000;
        console.log(`  ${t + 1} things, ${written} events, ${Math.round(written / seconds)} rows/s`);
      }
    }
    // As autovacuum would: the visibility map lets counts read the index alone.
    await client.query('vacuum analyze');
    await client.query('create table bench_complete (done integer)');
  } finally {
    await client.end();
  }
}

async function postgresReady(url: string, schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const found = await client.query('select to_regclass($1) as t', [`${schema}.bench_complete`]);
    return found.rows[0].t !== null;
  } finally {
    await client.end();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** A baseline's row and a measured row beside it: p50, p99, the p50 ratio, server CPU per request. */
function comparison(
  [baseLabel, base]: [string, number[]],
  [label, measured, cpuMs]: [string, number[], number],
  digits: number,
): (string | number)[][] {
  const row = (name: string, times: number[], ratio: string, cpu: string) => [
    name,
    median(times).toFixed(digits),
    percentile(times, 99).toFixed(digits),
    ratio,
    cpu,
  ];
  return [
    row(baseLabel, base, '1.00x', '-'),
    row(label, measured, `${(median(measured) / median(base)).toFixed(2)}x`, cpuMs.toFixed(digits)),
  ];
}

async function timed(times: number, work: () => Promise<unknown> | unknown): Promise<number[]> {
  await work();
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await work();
    out.push(performance.now() - started);
  }
  return out;
}

async function post(url: string, token: string, body: object): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': token },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

export async function run(args: string[]): Promise<void> {
  const store = option(args, 'store', 'sqlite');
  const things = Number(option(args, 'things', '1000'));
  const events = Number(option(args, 'events', '10000'));
  const requests = Number(option(args, 'requests', '300'));
  const rounds = Number(option(args, 'rounds', '20'));
  console.log(`query benchmark: ${describeMachine()}; ${store}; ${things} things x ${events} events`);
  buildServer();
  let serverEnv: Record<string, string>;
  let direct: DirectStore;
  if (store === 'postgres') {
    const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const schema = `tb_bench_query_v2_${things}x${events}`;
    if (!(await postgresReady(url, schema))) {
      console.log(`generating schema ${schema} (once; later runs reuse it)`);
      await generatePostgres(url, schema, things, events);
    }
    serverEnv = { DATABASE_URL: url, DATABASE_SCHEMA: schema };
    direct = await postgresDirect(url, schema);
  } else {
    mkdirSync('.bench', { recursive: true });
    const path = join('.bench', `query-v2-${things}x${events}.db`);
    if (!existsSync(path)) {
      console.log(`generating ${path} (once; later runs reuse it)`);
      await generate(path, things, events);
    }
    serverEnv = { DATABASE_URL: `sqlite:${path}` };
    direct = sqliteDirect(path);
  }
  const server = await startChildServer('thingbase-compiled.mjs', { ...ADMIN, ...serverEnv, MQTT_PORT: '0' });
  const rows: (string | number)[][] = [['what', 'p50 ms', 'p99 ms', 'vs direct SQL (p50)', 'server CPU ms/request']];
  try {
    const session = (await (
      await fetch(`${server.url}/api_sign_in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD }),
      })
    ).json()) as { auth_token: string };
    const token = session.auth_token as string;
    // thing_data: the newest 100 events of one thing.
    const dataThing = `q-${Math.floor(things / 2)}`;
    const dataId = await direct.thingId(dataThing);
    const baseline = await timed(requests, () => direct.newestPage(dataId));
    let cpu = cpuSeconds(server.pid);
    const served = await timed(requests, async () => {
      const answer = await post(`${server.url}/api/v3/query/thing_data`, token, { thing_key: dataThing, per: 100 });
      if (answer[dataThing].event_data.length !== 100) throw new Error('thing_data answered the wrong page');
      if (answer[dataThing].total_event_count !== events) throw new Error('thing_data answered the wrong total');
    });
    const dataCpu = ((cpuSeconds(server.pid) - cpu) / (requests + 1)) * 1000;
    rows.push(
      ...comparison(
        ['direct SQL: newest 100 rows with the total', baseline],
        [`thing_data, newest 100 of ${events} events (target p99 < 10 ms)`, served, dataCpu],
        2,
      ),
    );

    // thing_data by arrival: the newest 100 of the events that arrived in the thing's last day.
    const lastDay = Math.min(events, 1440);
    const arrivedFrom = START + (events - lastDay) * 60_000;
    const arrivalBaseline = await timed(requests, () => direct.arrivalPage(dataId, arrivedFrom));
    cpu = cpuSeconds(server.pid);
    const arrivalServed = await timed(requests, async () => {
      const body = { thing_key: dataThing, per: 100, from: arrivedFrom / 1000, query_by_created_at: true };
      const answer = await post(`${server.url}/api/v3/query/thing_data`, token, body);
      if (answer[dataThing].total_event_count !== lastDay) throw new Error('thing_data by arrival: wrong total');
    });
    const arrivalCpu = ((cpuSeconds(server.pid) - cpu) / (requests + 1)) * 1000;
    rows.push(
      ...comparison(
        ['direct SQL: newest 100 rows by arrival of the last day, with their count', arrivalBaseline],
        [`thing_data with query_by_created_at, newest 100 of the last day (${lastDay})`, arrivalServed, arrivalCpu],
        2,
      ),
    );

    // thing_aggregated_data: 30 days, 15-minute buckets, Asia/Kolkata, 3 metrics.
    const aggId = await direct.thingId('q-0');
    const from = START;
    const to = START + 30 * DAY - 1000;
    const aggBaseline = await timed(rounds, () => direct.aggregationReads(aggId, from, to));
    const eventsBaseline = await timed(rounds, () => direct.eventReads(aggId, from, to));
    const groupedBaseline = await timed(rounds, async () => {
      const buckets = await direct.groupedSql(aggId, from, to);
      if (buckets !== 2880) throw new Error(`the direct GROUP BY made ${buckets} buckets, not 2880`);
    });
    const request = {
      thing_keys: ['q-0'],
      time_grouping: 'minute',
      time_grouping_value: 15,
      time_zone: 'Asia/Kolkata',
      from: '2026/10/01 00:00:00',
      to: '2026/10/30 23:59:59',
      metrics: ['temperature', 'pressure', 'rpm'],
    };
    cpu = cpuSeconds(server.pid);
    const aggServed = await timed(rounds, async () => {
      const answer = await post(`${server.url}/api/v3/query/thing_aggregated_data`, token, request);
      if (answer.summary_result.temperature.count !== AGGREGATED_EVENTS) {
        throw new Error(`aggregated ${answer.summary_result.temperature.count} events, not ${AGGREGATED_EVENTS}`);
      }
    });
    const aggCpu = ((cpuSeconds(server.pid) - cpu) / (rounds + 1)) * 1000;
    rows.push(
      ...comparison(
        ['direct SQL: the same reads (slot rollups, events of the partial last slot)', aggBaseline],
        ['thing_aggregated_data, 30 days in 15-minute buckets (target < 50 ms)', aggServed, aggCpu],
        1,
      ),
      // What reading every event of the range costs, as the aggregation did before rollups, for scale.
      ...comparison(
        ['direct SQL: every event of the range (43,200)', eventsBaseline],
        ['thing_aggregated_data, against that', aggServed, aggCpu],
        1,
      ),
      // The same numbers computed by the engine from the events, with no Thingbase (target: within 1.5x).
      ...comparison(
        ['direct SQL: the 2,880 buckets by one GROUP BY over the events', groupedBaseline],
        ['thing_aggregated_data, against that (target: within 1.5x)', aggServed, aggCpu],
        1,
      ),
    );
  } finally {
    await direct.close();
    await server.stop();
  }
  console.log(table(rows));
}
