/**
 * `npm run bench -- core [--store sqlite|postgres] [--duration 10] [--rounds 3]`
 * Throughput of sign-in and of an authenticated list (GET /api/v3/roles), next to a bare Fastify
 * route measured in the same run. Target: the authenticated list costs at most 3x the bare route.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildServer, describeMachine, loadServer, median, option, startChildServer, table } from './support.ts';

const EMAIL = 'bench@example.com';
const PASSWORD = 'benchmark password';

export async function run(args: string[]): Promise<void> {
  const store = option(args, 'store', 'sqlite');
  const duration = Number(option(args, 'duration', '10'));
  const rounds = Number(option(args, 'rounds', '3'));
  const schema = `tb_bench_${randomBytes(4).toString('hex')}`;
  const databaseUrl =
    store === 'postgres'
      ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
      : `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-bench-')), 'bench.db')}`;
  console.log(`core benchmark: ${describeMachine()}; store ${store}; ${rounds} rounds of ${duration}s, 50 connections`);

  buildServer();
  const bare = await startChildServer('bare');
  const thingbase = await startChildServer('thingbase-compiled.mjs', {
    DATABASE_URL: databaseUrl,
    ...(store === 'postgres' ? { DATABASE_SCHEMA: schema } : {}),
    THINGBASE_ADMIN_EMAIL: EMAIL,
    THINGBASE_ADMIN_PASSWORD: PASSWORD,
    MQTT_PORT: '0',
  });
  try {
    const signIn = await fetch(`${thingbase.url}/api_sign_in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    const { auth_token: token } = (await signIn.json()) as { auth_token: string };
    for (let i = 0; i < 10; i++) {
      await fetch(`${thingbase.url}/api/v3/roles`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-auth-token': token },
        body: JSON.stringify({ role: { name: `role ${i}`, abilities: [11, 21, 31] } }),
      });
    }
    const samples: Record<string, number[]> = { bare: [], roles: [], signIn: [] };
    const p99: Record<string, number[]> = { bare: [], roles: [], signIn: [] };
    const cpu: Record<string, number[]> = { bare: [], roles: [], signIn: [] };
    for (let round = 0; round < rounds; round++) {
      const bareResult = await loadServer(bare, { url: `${bare.url}/hello`, duration });
      const rolesResult = await loadServer(thingbase, {
        url: `${thingbase.url}/api/v3/roles`,
        duration,
        headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      });
      const signInResult = await loadServer(thingbase, {
        url: `${thingbase.url}/api_sign_in`,
        method: 'POST',
        duration: Math.min(duration, 5),
        connections: 10,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
      });
      for (const [name, result] of [
        ['bare', bareResult],
        ['roles', rolesResult],
        ['signIn', signInResult],
      ] as const) {
        if (result.non2xx > 0 || result.errors > 0)
          throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        samples[name]?.push(result.requestsPerSecond);
        p99[name]?.push(result.p99);
        cpu[name]?.push(result.cpuPerRequest);
      }
    }
    const bareRps = median(samples.bare as number[]);
    const bareCpu = median(cpu.bare as number[]);
    const rows: (string | number)[][] = [
      ['what', 'req/s', 'p99 ms', 'throughput vs bare', 'server CPU us/req', 'CPU vs bare'],
    ];
    for (const [name, label] of [
      ['bare', 'bare Fastify route (baseline)'],
      ['roles', 'GET /api/v3/roles, authenticated'],
      ['signIn', 'POST /api_sign_in (scrypt N=16384)'],
    ] as const) {
      const rps = median(samples[name] as number[]);
      const perRequest = median(cpu[name] as number[]);
      rows.push([
        label,
        Math.round(rps),
        median(p99[name] as number[]),
        `${(bareRps / rps).toFixed(2)}x`,
        perRequest.toFixed(0),
        `${(perRequest / bareCpu).toFixed(2)}x`,
      ]);
    }
    console.log(table(rows));
    console.log(
      '(medians of the rounds; the load generator shares the 2 cores, so throughput ratios also carry its own cost)',
    );
    // Each round's list against the bare route measured just before it: the machine's speed drifts
    // between rounds, so ratios of neighbours are steadier than a ratio of medians.
    const roundRatios = (cpu.roles as number[]).map((roles, i) => roles / ((cpu.bare as number[])[i] as number));
    const ratio = median(roundRatios);
    console.log(
      `authenticated list costs ${ratio.toFixed(2)}x a bare route in server CPU per request (median of the rounds' ratios ${roundRatios.map((r) => r.toFixed(2)).join(', ')}; target: at most 3x): ${ratio <= 3 ? 'met' : 'NOT met'}`,
    );
  } finally {
    await thingbase.stop();
    await bare.stop();
    if (store === 'postgres') {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
  }
}
