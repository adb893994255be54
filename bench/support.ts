/** Shared pieces of the benchmarks: child-process servers, load generation, machine description. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { request } from 'undici';

const here = dirname(fileURLToPath(import.meta.url));

export interface ChildServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts bench/servers/<script> in its own process (`.mjs` as plain JavaScript, else TypeScript through
 * tsx); it prints `READY <url>` when it listens.
 */
export function startChildServer(script: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const args = script.endsWith('.mjs')
    ? [join(here, 'servers', script)]
    : ['--import', 'tsx', join(here, 'servers', `${script}.ts`)];
  // BENCH_SERVER_NODE_ARGS passes flags to the server's node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, ...args], {
    // Load far beyond the default API rate limit of one organisation; a benchmark may set its own.
    env: { ...process.env, API_RATE_LIMIT: '1000000000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    // BENCH_SERVER_STDOUT names a file that gets the server's standard output (its log, --trace-gc).
    if (process.env.BENCH_SERVER_STDOUT) child.stdout?.pipe(createWriteStream(process.env.BENCH_SERVER_STDOUT));
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /READY (\S+)/.exec(output);
      if (match) {
        resolve({
          url: match[1] as string,
          pid: child.pid as number,
          stop: () =>
            new Promise((done) => {
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready:\n${output}`)));
  });
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(options: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon({ connections: 50, duration: 10, ...options });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

export function describeMachine(): string {
  const cpu = cpus();
  return `${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

export function option(args: string[], name: string, fallback: string): string {
  const index = args.indexOf(`--${name}`);
  return index >= 0 && args[index + 1] !== undefined ? (args[index + 1] as string) : fallback;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export function table(rows: (string | number)[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length))) ?? [];
  return rows.map((r) => r.map((c, i) => String(c).padEnd(widths[i] ?? 0)).join('  ')).join('\n');
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
export function cpuSeconds(pid: number): number {
  const { user, system } = cpuTimes(pid);
  return user + system;
}

/** Each thread's CPU time so far in seconds (user and kernel), by thread id, with the thread's name. */
export function threadCpuSeconds(pid: number): Map<string, { name: string; seconds: number }> {
  const threads = new Map<string, { name: string; seconds: number }>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      threads.set(tid, { name, seconds: (Number(fields[11]) + Number(fields[12])) / 100 });
    }
  } catch {
    // The process or one of its threads ended meanwhile.
  }
  return threads;
}

/** A process's CPU time so far in seconds, in user space and in the kernel on its behalf. */
export function cpuTimes(pid: number): { user: number; system: number } {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name; in clock ticks.
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

export interface MeasuredLoad extends LoadResult {
  /** Server CPU time per request, in microseconds. */
  cpuPerRequest: number;
}

/** Load against a child server, also measuring the server's CPU time per request. */
export async function loadServer(server: ChildServer, options: autocannon.Options): Promise<MeasuredLoad> {
  const before = cpuSeconds(server.pid);
  const started = performance.now();
  const result = await load(options);
  const seconds = (performance.now() - started) / 1000;
  const requests = result.requestsPerSecond * seconds;
  return { ...result, cpuPerRequest: ((cpuSeconds(server.pid) - before) / requests) * 1e6 };
}

/** Compiles the server (`npm run build`), so benchmarks measure the JavaScript `npm start` runs. */
export function buildServer(): void {
  const result = spawnSync('npm', ['run', 'build'], { stdio: 'ignore' });
  if (result.status !== 0) throw new Error('npm run build failed');
}

export interface KeyPair {
  access_key: string;
  secret_key: string;
}

/** Lowercase hex HMAC-SHA256, as devices sign. */
export const sign = (secret: string, body: string): string => createHmac('sha256', secret).update(body).digest('hex');

/**
 * The SDKs' MQTT payload: the signed compact JSON text, then `hash` (its signature, given when the
 * caller keeps it), `access_key` and the protocol version.
 */
export const mqttEnvelope = (pair: KeyPair, signed: string, hash = sign(pair.secret_key, signed)): string =>
  `${signed.slice(0, -1)},"hash":"${hash}","access_key":"${pair.access_key}","aliot_protocol_version":2.0}`;

/** A process's resident memory, MiB, from /proc (Linux); NaN once it is gone. */
export function rssMiB(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

export async function postJson(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return (await response.json()) as any;
}

/** The first admin of every benchmark's server. */
export const BENCH_ADMIN = { email: 'bench@example.com', password: 'benchmark password' };

/** A fresh store for one benchmark run: a SQLite file in a new folder, or a PostgreSQL schema of its own. */
export interface BenchStore {
  engine: 'sqlite' | 'postgres';
  databaseUrl: string;
  /** The PostgreSQL schema. */
  schema: string;
  /** The server's settings for it. */
  env: Record<string, string>;
  /** Drops the PostgreSQL schema. */
  dispose(): Promise<void>;
}

export function benchStore(engine: string): BenchStore {
  if (engine !== 'sqlite' && engine !== 'postgres') throw new Error(`--store must be sqlite or postgres`);
  const schema = `tb_bench_${randomBytes(4).toString('hex')}`;
  const databaseUrl =
    engine === 'postgres'
      ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
      : `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-bench-')), 'bench.db')}`;
  return {
    engine,
    databaseUrl,
    schema,
    env: { DATABASE_URL: databaseUrl, ...(engine === 'postgres' ? { DATABASE_SCHEMA: schema } : {}) },
    dispose: async () => {
      if (engine !== 'postgres') return;
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    },
  };
}

/** The floor server (bench/servers/mqtt-floor.ts) and the key pair it checks messages against. */
export interface Floor {
  server: ChildServer;
  keyPair: KeyPair;
}

/**
 * Starts the floor on `mqttPort`, with a key pair of its own (Thingbase issues one over its API);
 * `store` is its FLOOR_STORE, `sqlite` or `none`.
 */
export async function startFloor(mqttPort: number, store = 'sqlite'): Promise<Floor> {
  const keyPair = { access_key: randomBytes(16).toString('hex'), secret_key: randomBytes(32).toString('hex') };
  const server = await startChildServer('mqtt-floor', {
    MQTT_PORT: String(mqttPort),
    FLOOR_SECRET_KEY: keyPair.secret_key,
    FLOOR_STORE: store,
  });
  return { server, keyPair };
}

/** Compiles and starts Thingbase on a store, with the benchmark admin and the embedded broker on `mqttPort`. */
export function startThingbase(
  store: BenchStore,
  mqttPort: number,
  env: Record<string, string> = {},
): Promise<ChildServer> {
  buildServer();
  return startChildServer('thingbase-compiled.mjs', {
    ...env,
    ...store.env,
    THINGBASE_ADMIN_EMAIL: BENCH_ADMIN.email,
    THINGBASE_ADMIN_PASSWORD: BENCH_ADMIN.password,
    MQTT_PORT: String(mqttPort),
  });
}

/**
 * A port for the embedded broker, away from the usual ones and below Linux's range of ports for
 * outgoing connections (from 32768), where a benchmark's own thousands of client sockets had taken
 * the one chosen and the server could not start.
 */
export const benchMqttPort = (): number => 20000 + Math.floor(Math.random() * 12000);

/** The value below which a share `q` of the values lie. */
export const quantile = (values: number[], q: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

/** Latencies as `p50 / p99 / max`, in ms to a tenth. */
export const latency = (values: number[]): string =>
  values.length === 0
    ? '-'
    : `${quantile(values, 0.5).toFixed(1)} / ${quantile(values, 0.99).toFixed(1)} / ${quantile(values, 1).toFixed(1)}`;

/**
 * Registers things of these keys as their device would (`register.json`, signed), a hundred at a time;
 * named by `nameOf` when given (else their key).
 */
export async function registerThings(
  url: string,
  pair: KeyPair,
  thingKeys: readonly string[],
  nameOf?: (thingKey: string) => string,
): Promise<void> {
  for (let i = 0; i < thingKeys.length; i += 100) {
    await Promise.all(
      thingKeys.slice(i, i + 100).map((thing_key) => {
        const body = JSON.stringify(nameOf ? { thing_key, name: nameOf(thing_key) } : { thing_key });
        return request(`${url}/api/v3/things/register.json`, {
          method: 'POST',
          headers: { 'x-access-key': pair.access_key, 'x-dtn-signature': sign(pair.secret_key, body) },
          body,
        }).then((r) => r.body.text());
      }),
    );
  }
}

/**
 * A fleet of boilers for the dashboard benchmarks: a template with numeric `temperature` and
 * `pressure`, and `things` things of it (`boiler-<n>`), imported a thousand at a time, each with the
 * fields `extra` gives it.
 */
export async function importBoilers(
  url: string,
  headers: Record<string, string>,
  things: number,
  extra: (index: number) => Record<string, unknown> = () => ({}),
): Promise<{ templateKey: string; keys: string[] }> {
  const template = await postJson(
    url,
    '/api/v3/thing_templates',
    {
      thing_template: {
        name: 'boiler',
        metrics: ['temperature', 'pressure'].map((name) => ({ name, data_type: 'number' })),
      },
    },
    headers,
  );
  const templateKey = template.thing_template.thing_template_key as string;
  const keys = Array.from({ length: things }, (_, i) => `boiler-${i}`);
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys
      .slice(i, i + 1000)
      .map((thing_key, j) => ({ thing_key, name: thing_key, thing_template_key: templateKey, ...extra(i + j) }));
    const imported = await postJson(url, '/api/v3/things/import', { things: batch }, headers);
    if (imported.success === false) throw new Error(JSON.stringify(imported));
  }
  return { templateKey, keys };
}
