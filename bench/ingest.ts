/**
 * `npm run bench -- ingest [--store sqlite|postgres] [--duration 10] [--devices 200] [--inflight 10]`
 * Event ingestion through the device interface, each figure next to a baseline measured in the same
 * run: the same rows written straight into the store in transactions of 1,000.
 * - HTTP: one signed event per request, and bulks of 1,000 events per request.
 * - MQTT: QoS 1 messages in the SDK envelope with `hash`, 3 metrics each, from many devices, each
 *   message counted when its httpAck (sent after commit) arrives.
 * The server runs compiled, in its own process; its peak RSS is sampled from /proc.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import pg from 'pg';
import { openStore } from '../src/store/store.ts';
import { buildServer, describeMachine, load, option, startChildServer, table } from './support.ts';

const sign = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex');

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

async function json(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return (await response.json()) as any;
}

export async function run(args: string[]): Promise<void> {
  const store = option(args, 'store', 'sqlite');
  const duration = Number(option(args, 'duration', '10'));
  const devices = Number(option(args, 'devices', '200'));
  const inflight = Number(option(args, 'inflight', '10'));
  const schema = `tb_bench_${randomBytes(4).toString('hex')}`;
  const databaseUrl =
    store === 'postgres'
      ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
      : `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-bench-')), 'bench.db')}`;
  const mqttPort = 20000 + Math.floor(Math.random() * 20000);
  console.log(
    `ingest benchmark: ${describeMachine()}; store ${store}; ${duration}s per run; MQTT ${devices} devices x ${inflight} in flight`,
  );

  buildServer();
  const server = await startChildServer('thingbase-compiled.mjs', {
    DATABASE_URL: databaseUrl,
    ...(store === 'postgres' ? { DATABASE_SCHEMA: schema } : {}),
    THINGBASE_ADMIN_EMAIL: 'bench@example.com',
    THINGBASE_ADMIN_PASSWORD: 'benchmark password',
    MQTT_PORT: String(mqttPort),
  });
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(server.pid));
  }, 100);
  const rows: (string | number)[][] = [['what', 'events/s', 'vs baseline', 'requests/s']];
  try {
    const { auth_token: token } = await json(server.url, '/api_sign_in', {
      email: 'bench@example.com',
      password: 'benchmark password',
    });
    const { key_pair: pair } = await json(
      server.url,
      '/api/v3/key_pairs',
      { key_pair: { name: 'bench' } },
      { 'x-auth-token': token },
    );
    const things = Array.from({ length: devices }, (_, i) => `bench-${i}`);
    for (const thing_key of things) {
      const body = JSON.stringify({ thing_key });
      await fetch(`${server.url}/api/v3/things/register.json`, {
        method: 'POST',
        headers: { 'x-access-key': pair.access_key, 'x-dtn-signature': sign(pair.secret_key, body) },
        body,
      });
    }

    // Baseline: the same rows straight into the store, 1,000 per transaction.
    const direct = await openStore({
      databaseUrl,
      schema: store === 'postgres' ? schema : undefined,
      sqliteSynchronous: process.env.SQLITE_SYNCHRONOUS === 'NORMAL' ? 'NORMAL' : 'FULL',
    });
    const thingIds = (await direct.db.selectFrom('things').select('thing_id').execute()).map((r) => Number(r.thing_id));
    const baselineRows = 200_000;
    const started = performance.now();
    for (let i = 0; i < baselineRows; i += 1000) {
      const now = Date.now();
      await direct.transaction(async (tx) => {
        for (let j = 0; j < 1000; j += 500) {
          await tx
            .insertInto('events')
            .values(
              Array.from({ length: 500 }, (_, k) => ({
                thing_id: thingIds[(i + j + k) % thingIds.length] as number,
                timestamp: now,
                created_at: now,
                data: JSON.stringify({ temperature: 20 + ((i + k) % 50), pressure: 1.5, rpm: 1200 }),
                waypoint: null,
              })),
            )
            .execute();
        }
      });
    }
    const baseline = baselineRows / ((performance.now() - started) / 1000);
    await direct.close();
    rows.push(['baseline: direct inserts, 1,000 per transaction', Math.round(baseline), '1.00x', '-']);

    // HTTP, one signed event per request.
    const single = JSON.stringify({ thing_key: things[0], data: { temperature: 21.5, pressure: 1.5, rpm: 1200 } });
    const singleResult = await load({
      url: `${server.url}/api/v3/things/event.json`,
      method: 'POST',
      duration,
      connections: 100,
      headers: {
        'content-type': 'application/json',
        'x-access-key': pair.access_key,
        'x-dtn-signature': sign(pair.secret_key, single),
      },
      body: single,
    });
    if (singleResult.non2xx > 0) throw new Error(`HTTP single: ${singleResult.non2xx} non-2xx answers`);
    rows.push([
      'HTTP, signed, 1 event per request',
      Math.round(singleResult.requestsPerSecond),
      `${(singleResult.requestsPerSecond / baseline).toFixed(2)}x`,
      Math.round(singleResult.requestsPerSecond),
    ]);

    // HTTP, bulks of 1,000 events.
    const bulk = JSON.stringify({
      events: Array.from({ length: 1000 }, (_, i) => ({
        thing_key: things[i % things.length],
        data: { temperature: 20 + (i % 50), pressure: 1.5, rpm: 1200 },
      })),
    });
    const bulkResult = await load({
      url: `${server.url}/api/v3/things/event.json`,
      method: 'POST',
      duration,
      connections: 8,
      headers: {
        'content-type': 'application/json',
        'x-access-key': pair.access_key,
        'x-dtn-signature': sign(pair.secret_key, bulk),
      },
      body: bulk,
    });
    if (bulkResult.non2xx > 0) throw new Error(`HTTP bulk: ${bulkResult.non2xx} non-2xx answers`);
    rows.push([
      'HTTP, signed, bulks of 1,000 events',
      Math.round(bulkResult.requestsPerSecond * 1000),
      `${((bulkResult.requestsPerSecond * 1000) / baseline).toFixed(2)}x`,
      Math.round(bulkResult.requestsPerSecond),
    ]);

    // MQTT, QoS 1, SDK envelope with hash; each message counted when its httpAck arrives.
    const mqttResult = await mqttLoad(mqttPort, pair, things, inflight, duration);
    rows.push([
      `MQTT QoS 1, ${devices} devices, acknowledged`,
      Math.round(mqttResult.perSecond),
      `${(mqttResult.perSecond / baseline).toFixed(2)}x`,
      `${mqttResult.failed} refused`,
    ]);
    console.log(table(rows));
    console.log(`server peak RSS during the runs: ${peakRss.toFixed(0)} MiB`);
  } finally {
    clearInterval(sampler);
    await server.stop();
    if (store === 'postgres') {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
  }
}

async function mqttLoad(
  port: number,
  pair: { access_key: string; secret_key: string },
  things: string[],
  inflight: number,
  duration: number,
): Promise<{ perSecond: number; failed: number }> {
  const password = sign(pair.secret_key, pair.access_key);
  let acked = 0;
  let failed = 0;
  let stopping = false;
  let outstanding = 0;
  const clients = await Promise.all(
    things.map(async (thingKey, i) => {
      const clientId = `bench${String(i).padStart(5, '0')}`;
      const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, {
        clientId,
        username: pair.access_key,
        password,
        clean: true,
        reconnectPeriod: 0,
      });
      await client.subscribeAsync(`Altizon/Datonis/${clientId}/httpAck`, { qos: 1 });
      return { client, clientId, thingKey };
    }),
  );
  const started = performance.now();
  for (const { client, clientId, thingKey } of clients) {
    const send = () => {
      if (stopping) return;
      const signed = JSON.stringify({ thing_key: thingKey, data: { temperature: 21.5, pressure: 1.5, rpm: 1200 } });
      const text = `${signed.slice(0, -1)},"hash":"${sign(pair.secret_key, signed)}","access_key":"${pair.access_key}","aliot_protocol_version":2.0}`;
      outstanding += 1;
      client.publish(`Altizon/Datonis/${clientId}/event`, text, { qos: 1 });
    };
    client.on('message', (_topic, payload) => {
      outstanding -= 1;
      if ((JSON.parse(payload.toString()) as { http_code: number }).http_code === 200) acked += 1;
      else failed += 1;
      send();
    });
    for (let k = 0; k < inflight; k++) send();
  }
  await new Promise((resolve) => setTimeout(resolve, duration * 1000));
  stopping = true;
  const deadline = Date.now() + 10_000;
  while (outstanding > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(clients.map(({ client }) => client.endAsync()));
  return { perSecond: acked / elapsed, failed };
}
