/**
 * `npm run bench -- dashboard [--store sqlite|postgres|both] [--things 1000] [--days 30] [--rounds 20]
 *                             [--baseline-rounds 3] [--list-rounds 3]`
 * The server side of a dashboard's fleet average: `fleet_aggregated_data` over every thing of a
 * template, `--days` days in 15-minute buckets (UTC, so the buckets are rollup slots), one metric, p50
 * and p99 of `--rounds` sequential requests and the server's CPU time per request; beside it, in the
 * same run and over the same things and range, `thing_aggregated_data`, which answers the same numbers
 * per thing, `--baseline-rounds` times, after the fleet's: in as few requests one after the other as
 * its bound on an answer's cells allows (86 things a request at 30 days), whose summaries added up are
 * checked to be the fleet's (at 1,000 things the answers are over 200 MB and take most of a minute,
 * and their garbage is collected during the next request). Then `--list-rounds` of the fleet of all the template's things but one,
 * named by `thing_keys`: no template rollup covers them, and each thing's rollups are summed.
 * Seeding: each thing has a rollup in every slot (what a thing reporting every minute leaves), written
 * straight into the store in a statement per thing; the template's slots are then listed for repair,
 * as migration 019 lists the slots of rollups stored before template rollups existed, and the server's
 * own repair (events/template-rollups.ts, which the retention sweeper runs) counts the template's
 * rollups from them, 100 slots per transaction, before anything is timed. Sending 2.88 million events
 * through the server's ingestion would take most of an hour on a shared machine. The range is whole
 * slots, so neither query reads events.
 */
import http from 'node:http';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { repairTemplateRollups } from '../src/events/template-rollups.ts';
import { MAX_ANSWER_CELLS } from '../src/queries/aggregation.ts';
import { openStore } from '../src/store/store.ts';
import {
  BENCH_ADMIN,
  benchMqttPort,
  benchStore,
  cpuSeconds,
  describeMachine,
  importBoilers,
  latency,
  option,
  postJson,
  quantile,
  startThingbase,
  table,
} from './support.ts';

const SLOT = 15 * 60_000;
const DAY = 86_400_000;
/** 2026-10-01 00:00 UTC. */
const START = Date.UTC(2026, 9, 1);

/** One slot's stats of a thing: 15 minute readings of temperature and pressure. */
function slotStats(thing: number, slot: number): string {
  const t = 20 + ((thing * 7 + slot) % 30);
  const p = 1 + ((thing + slot) % 13) / 20;
  return JSON.stringify({ temperature: [15, t * 15, t - 2, t + 2], pressure: [15, p * 15, p, p + 0.1] });
}

/** Writes every thing's rollups of the range straight into the store, a thing per statement. */
async function writeRollups(store: ReturnType<typeof benchStore>, thingIds: number[], slots: number) {
  const started = performance.now();
  if (store.engine === 'sqlite') {
    const db = new BetterSqlite3(store.databaseUrl.replace(/^sqlite:/, ''));
    db.pragma('busy_timeout = 10000');
    const insert = db.prepare('insert into event_rollups (thing_id, slot, stats) values (?, ?, ?)');
    const write = db.transaction((thingId: number) => {
      for (let s = 0; s < slots; s++) insert.run(thingId, START + s * SLOT, slotStats(thingId, s));
    });
    for (const id of thingIds) write(id);
    db.close();
  } else {
    const client = new pg.Client({ connectionString: store.databaseUrl, options: `-c search_path=${store.schema}` });
    await client.connect();
    for (const id of thingIds) {
      const at = Array.from({ length: slots }, (_, s) => START + s * SLOT);
      await client.query(
        'insert into event_rollups (thing_id, slot, stats) select $1, s, t from unnest($2::bigint[], $3::text[]) as u(s, t)',
        [id, at, at.map((_, s) => slotStats(id, s))],
      );
    }
    await client.query('analyze event_rollups');
    await client.end();
  }
  return (performance.now() - started) / 1000;
}

/**
 * Lists the template's slots for repair and has the server's repair count them, as the sweeper does
 * after migration 019, 100 slots per transaction.
 */
async function buildTemplateRollups(store: ReturnType<typeof benchStore>, templateKey: string, slots: number) {
  const started = performance.now();
  const opened = await openStore({ databaseUrl: store.databaseUrl, schema: store.schema });
  try {
    const at = Array.from({ length: slots }, (_, s) => START + s * SLOT);
    for (let i = 0; i < at.length; i += 1000) {
      await opened.db
        .insertInto('template_rollup_repairs')
        .values(at.slice(i, i + 1000).map((slot) => ({ thing_template_key: templateKey, slot })))
        .execute();
    }
    while ((await opened.transaction((tx) => repairTemplateRollups(tx, 100_000))) > 0) {}
  } finally {
    await opened.close();
  }
  return (performance.now() - started) / 1000;
}

/** The things' ids, read from the store by key. */
async function thingIds(store: ReturnType<typeof benchStore>, keys: string[]): Promise<number[]> {
  if (store.engine === 'sqlite') {
    const db = new BetterSqlite3(store.databaseUrl.replace(/^sqlite:/, ''), { readonly: true });
    const rows = db
      .prepare('select thing_id from things where thing_key in (select value from json_each(?))')
      .all(JSON.stringify(keys)) as { thing_id: number }[];
    db.close();
    return rows.map((r) => r.thing_id);
  }
  const client = new pg.Client({ connectionString: store.databaseUrl, options: `-c search_path=${store.schema}` });
  await client.connect();
  const rows = await client.query('select thing_id from things where thing_key = any($1::text[])', [keys]);
  await client.end();
  return rows.rows.map((r: { thing_id: string }) => Number(r.thing_id));
}

/**
 * A request on a connection of its own: a kept-alive one was found closed by the server when reused
 * after a long answer (undici's "other side closed"), failing a run.
 */
function timed(url: string, path: string, body: object, token: string): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${url}${path}`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'x-auth-token': token,
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const ms = performance.now() - started;
          if (response.statusCode !== 200) reject(new Error(`${path}: ${response.statusCode} ${text.slice(0, 300)}`));
          else resolve({ ms, text });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

async function runOn(
  engine: string,
  things: number,
  days: number,
  rounds: number,
  baselineRounds: number,
  listRounds: number,
): Promise<string[]> {
  const store = benchStore(engine);
  const server = await startThingbase(store, benchMqttPort());
  try {
    const token = (await postJson(server.url, '/api_sign_in', BENCH_ADMIN)).auth_token as string;
    const headers = { 'x-auth-token': token };
    const { templateKey, keys } = await importBoilers(server.url, headers, things);
    const slots = days * 96;
    const seconds = await writeRollups(store, await thingIds(store, keys), slots);
    console.log(`  ${engine}: ${things} things x ${slots} slots of rollups written in ${seconds.toFixed(1)} s`);
    const built = await buildTemplateRollups(store, templateKey, slots);
    console.log(`  ${engine}: the template's ${slots} slots counted from them in ${built.toFixed(1)} s`);

    const range = {
      from: START / 1000,
      to: (START + days * DAY) / 1000 - 1,
      time_zone: 'UTC',
      time_grouping: 'minute',
      time_grouping_value: 15,
      metrics: ['temperature'],
    };
    const fleetBody = { ...range, thing_template_key: templateKey };
    const fleet: number[] = [];
    const perThing: number[] = [];
    const sizes = [0, 0];
    let fleetText = '';
    // One first, not timed: the server's first query of a kind compiles it.
    await timed(server.url, '/api/v3/query/fleet_aggregated_data', fleetBody, token);
    // The fleet's rounds before the baseline's: the garbage of a 200 MB answer is collected during
    // whatever request comes next, which alternating would make the fleet's.
    const cpuBefore = cpuSeconds(server.pid);
    for (let round = 0; round < rounds; round++) {
      const a = await timed(server.url, '/api/v3/query/fleet_aggregated_data', fleetBody, token);
      fleet.push(a.ms);
      sizes[0] = a.text.length;
      fleetText = a.text;
    }
    const cpuMs = ((cpuSeconds(server.pid) - cpuBefore) * 1000) / rounds;
    let baselineCpuMs = 0;
    // A request may answer MAX_ANSWER_CELLS cells (a thing's buckets and summary, per metric): the things
    // are asked for in as few requests as that allows, one after the other, as a client must.
    const perRequest = Math.max(1, Math.floor(MAX_ANSWER_CELLS / (slots + 1)));
    for (let round = 0; round < baselineRounds; round++) {
      const at = cpuSeconds(server.pid);
      const started = performance.now();
      const merged = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY };
      sizes[1] = 0;
      for (let first = 0; first < keys.length; first += perRequest) {
        const body = { ...range, thing_keys: keys.slice(first, first + perRequest) };
        const b = await timed(server.url, '/api/v3/query/thing_aggregated_data', body, token);
        sizes[1] += b.text.length;
        const part = JSON.parse(b.text).summary_result.temperature as typeof merged;
        merged.count += part.count;
        merged.sum += part.sum;
        merged.min = Math.min(merged.min, part.min);
        merged.max = Math.max(merged.max, part.max);
      }
      perThing.push(performance.now() - started);
      baselineCpuMs += ((cpuSeconds(server.pid) - at) * 1000) / baselineRounds;
      const fleetSummary = JSON.parse(fleetText).summary_result.temperature as typeof merged;
      const same =
        fleetSummary.count === merged.count &&
        fleetSummary.min === merged.min &&
        fleetSummary.max === merged.max &&
        Math.abs(fleetSummary.sum - merged.sum) <= Math.abs(merged.sum) * 1e-9;
      if (!same) throw new Error(`the answers differ: ${JSON.stringify(fleetSummary)} ${JSON.stringify(merged)}`);
    }
    // Things that are not the whole of their template have no template rollups to read: the fleet of all
    // but one of them sums each one's rollups, slot by slot, in the store.
    const listBody = { ...range, thing_keys: keys.slice(1) };
    const listed: number[] = [];
    let listCpuMs = 0;
    let listSize = 0;
    for (let round = 0; round < listRounds; round++) {
      const at = cpuSeconds(server.pid);
      const c = await timed(server.url, '/api/v3/query/fleet_aggregated_data', listBody, token);
      listCpuMs += ((cpuSeconds(server.pid) - at) * 1000) / listRounds;
      listed.push(c.ms);
      listSize = c.text.length;
    }
    const ratio = quantile(fleet, 0.99) / quantile(perThing, 0.99);
    const listRows =
      listRounds === 0
        ? []
        : [
            [
              engine,
              `fleet_aggregated_data, ${keys.length - 1} of the template's things`,
              latency(listed),
              `${(quantile(listed, 0.99) / quantile(perThing, 0.99)).toFixed(2)}x`,
              listCpuMs.toFixed(1),
              `${(listSize / 1024).toFixed(0)} KiB`,
            ].join(' | '),
          ];
    return [
      ...listRows,
      [
        engine,
        'fleet_aggregated_data',
        latency(fleet),
        `${ratio.toFixed(2)}x`,
        cpuMs.toFixed(1),
        `${((sizes[0] as number) / 1024).toFixed(0)} KiB`,
      ].join(' | '),
      [
        engine,
        'thing_aggregated_data',
        latency(perThing),
        '1.00x',
        baselineCpuMs.toFixed(1),
        `${((sizes[1] as number) / 1024).toFixed(0)} KiB`,
      ].join(' | '),
    ];
  } finally {
    await server.stop();
    await store.dispose();
  }
}

export async function run(args: string[]): Promise<void> {
  const which = option(args, 'store', 'both');
  const things = Number(option(args, 'things', '1000'));
  const days = Number(option(args, 'days', '30'));
  const rounds = Number(option(args, 'rounds', '20'));
  const baselineRounds = Math.min(rounds, Number(option(args, 'baseline-rounds', '3')));
  const listRounds = Number(option(args, 'list-rounds', '3'));
  console.log(`dashboard: ${describeMachine()}`);
  console.log(
    `${things} things, ${days} days in 15-minute buckets, 1 metric, ${rounds} rounds of the fleet, ${baselineRounds} of the baseline`,
  );
  const rows: string[][] = [
    ['store', 'query', 'p50 / p99 / max ms', 'p99 vs thing_aggregated_data', 'server CPU ms', 'answer'],
  ];
  for (const engine of which === 'both' ? ['sqlite', 'postgres'] : [which]) {
    for (const line of await runOn(engine, things, days, rounds, baselineRounds, listRounds))
      rows.push(line.split(' | '));
  }
  console.log(table(rows));
}
