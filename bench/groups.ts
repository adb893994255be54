/**
 * `npm run bench -- groups [--things 100000] [--store sqlite|postgres] [--rounds 5]`
 * Membership listing of a dynamic group over many things: time of GET /api/v3/groups/:key/things
 * (first page and total_count) and the server's peak memory, next to a baseline that reads the
 * same thing rows straight from the store in one query, measured in the same run.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { createServer } from '../src/app.ts';
import { bootstrapFirstAdmin } from '../src/bootstrap.ts';
import { loadConfig } from '../src/core/config.ts';
import { newKey } from '../src/core/keys.ts';
import { describeMachine, median, option, table } from './support.ts';

/** Largest growth of the JS heap (MiB) while `work` runs, sampled every 2 ms. */
async function peakHeapGrowth(work: () => Promise<void>): Promise<number> {
  const before = process.memoryUsage().heapUsed;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 2);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return (Math.max(peak, process.memoryUsage().heapUsed) - before) / 2 ** 20;
}

export async function run(args: string[]): Promise<void> {
  const count = Number(option(args, 'things', '100000'));
  const store = option(args, 'store', 'sqlite');
  const rounds = Number(option(args, 'rounds', '5'));
  const schema = `tb_bench_${randomBytes(4).toString('hex')}`;
  const databaseUrl =
    store === 'postgres'
      ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
      : `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-bench-')), 'bench.db')}`;
  console.log(`groups benchmark: ${describeMachine()}; store ${store}; ${count} things; ${rounds} rounds`);
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    ...(store === 'postgres' ? { DATABASE_SCHEMA: schema } : {}),
    THINGBASE_ADMIN_EMAIL: 'bench@example.com',
    THINGBASE_ADMIN_PASSWORD: 'benchmark password',
    THINGBASE_PASSWORD_HASH_COST: '1024',
    LOG_LEVEL: 'warn',
    MQTT_PORT: '0',
  });
  const server = await createServer(config);
  // The first organisation, which serve makes once listening; this benchmark does not listen.
  await bootstrapFirstAdmin(server.store, config);
  try {
    const db = server.store.db;
    const organisation = await db.selectFrom('organisations').select('organisation_key').executeTakeFirstOrThrow();
    const template = await db.selectFrom('thing_templates').select('thing_template_key').executeTakeFirstOrThrow();
    const started = Date.now();
    for (let i = 0; i < count; i += 1000) {
      const rows = Array.from({ length: Math.min(1000, count - i) }, (_, j) => {
        const n = i + j;
        return {
          thing_key: newKey(),
          organisation_key: organisation.organisation_key,
          thing_template_key: template.thing_template_key,
          name: `machine ${n}`,
          description: '',
          tags: JSON.stringify(n % 10 === 0 ? ['boiler', `hall-${n % 7}`] : ['pump']),
          coordinates: null,
          bi_directional: 0,
          user_defined_properties: JSON.stringify({ site: n % 3 === 0 ? 'Pune' : 'Delhi', floor: String(n % 7) }),
          last_event_at: null,
          last_event: null,
          last_event_timestamp: null,
          last_beat_at: null,
          created_at: started + n,
          updated_at: started + n,
        };
      });
      await db.insertInto('things').values(rows).execute();
    }
    console.log(`inserted ${count} things in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const signIn = await server.app.inject({
      method: 'POST',
      url: '/api_sign_in',
      payload: { email: 'bench@example.com', password: 'benchmark password' },
    });
    const token = JSON.parse(signIn.body).auth_token as string;
    const cases = [
      {
        label: 'narrowed in SQL',
        expression:
          "tags contains 'boiler' and user_defined_properties.site == 'Pune' and user_defined_properties.floor >= 2",
        expected: (n: number) => n % 10 === 0 && n % 3 === 0 && n % 7 >= 2,
      },
      {
        label: 'evaluated on every thing',
        expression: "user_defined_properties.floor >= 5 or not (name contains 'machine')",
        expected: (n: number) => n % 7 >= 5,
      },
    ];
    const rows: (string | number)[][] = [['what', 'median ms', 'vs baseline', 'peak heap growth MiB']];
    const baseline: number[] = [];
    const baselineHeap = await peakHeapGrowth(async () => {
      for (let round = 0; round < rounds; round++) {
        const t = performance.now();
        const all = await sql`select * from things where organisation_key = ${organisation.organisation_key}`.execute(
          db,
        );
        baseline.push(performance.now() - t);
        if (all.rows.length !== count) throw new Error('baseline read the wrong number of rows');
      }
    });
    const b = median(baseline);
    rows.push([
      `baseline: select all ${count} thing rows in one query`,
      b.toFixed(0),
      '1.00x',
      baselineHeap.toFixed(1),
    ]);
    for (const testCase of cases) {
      const created = await server.app.inject({
        method: 'POST',
        url: '/api/v3/groups',
        headers: { 'x-auth-token': token },
        payload: { group: { name: testCase.label, group_type: 2, thing_expression: testCase.expression } },
      });
      const groupKey = JSON.parse(created.body).group.group_key as string;
      const expected = Array.from({ length: count }, (_, n) => n).filter(testCase.expected).length;
      const times: number[] = [];
      const heap = await peakHeapGrowth(async () => {
        for (let round = 0; round < rounds; round++) {
          const t = performance.now();
          const response = await server.app.inject({
            method: 'GET',
            url: `/api/v3/groups/${groupKey}/things?per=20`,
            headers: { 'x-auth-token': token },
          });
          times.push(performance.now() - t);
          const body = JSON.parse(response.body);
          if (body.total_count !== expected) throw new Error(`expected ${expected} members, got ${body.total_count}`);
        }
      });
      const m = median(times);
      rows.push([
        `membership, ${testCase.label} (${expected} members)`,
        m.toFixed(0),
        `${(m / b).toFixed(2)}x`,
        heap.toFixed(1),
      ]);
    }
    console.log(table(rows));
    console.log('Membership streams things in batches of 1000, so its memory does not grow with the number of things.');
  } finally {
    await server.close();
    if (store === 'postgres') {
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
  }
}
