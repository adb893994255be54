/**
 * `npm run bench -- no-data [--things 100000] [--seconds 10] [--silent 1000] [--store sqlite|postgres]`
 * The timer of `no_data` rules (docs/rules.md, "Rule timing"): the server's CPU per tick (one tick a
 * second, NO_DATA_CHECK_MS=1000) while a `no_data` rule watches `--things` things none of which is
 * due, next to a baseline measured in the same run: the same server idle before the rule exists.
 * Then `--silent` of the things fall silent at once (their creation and due times moved back in the
 * store) and the CPU of checking and firing them is reported per silence. The things are created
 * through the import endpoint, 20,000 per request.
 */
import { request } from 'undici';
import { openStore } from '../src/store/store.ts';
import {
  BENCH_ADMIN,
  benchMqttPort,
  benchStore,
  cpuSeconds,
  describeMachine,
  option,
  postJson,
  startThingbase,
  table,
} from './support.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function run(args: string[]): Promise<void> {
  const count = Number(option(args, 'things', '100000'));
  const seconds = Number(option(args, 'seconds', '10'));
  const silent = Math.min(count, Number(option(args, 'silent', '1000')));
  const store = benchStore(option(args, 'store', 'sqlite'));
  console.log(
    `no-data benchmark: ${describeMachine()}; store ${store.engine}; ${count} watched things; ${seconds} ticks per figure; ${silent} fall silent`,
  );
  process.env.NO_DATA_CHECK_MS = '1000';
  const server = await startThingbase(store, benchMqttPort());
  try {
    const token = (await postJson(server.url, '/api_sign_in', BENCH_ADMIN)).auth_token as string;
    for (let from = 0; from < count; from += 20_000) {
      const csv = ['thing_key,name'];
      for (let i = from; i < Math.min(count, from + 20_000); i++) csv.push(`watched-${i},machine ${i}`);
      const response = await request(`${server.url}/api/v3/things/import`, {
        method: 'POST',
        headers: { 'x-auth-token': token, 'content-type': 'text/csv' },
        body: `${csv.join('\n')}\n`,
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`import answered ${response.statusCode}: ${text}`);
    }
    /** Server CPU per tick (ms) over `seconds` ticks. */
    const perTick = async () => {
      const before = cpuSeconds(server.pid);
      await sleep(seconds * 1000);
      return ((cpuSeconds(server.pid) - before) / seconds) * 1000;
    };
    await sleep(2000);
    const idle = await perTick();

    let started = performance.now();
    const created = await postJson(
      server.url,
      '/api/v3/rules',
      { rule: { name: 'silent for an hour', trigger: 'no_data', for_seconds: 3600, alert_type: 1 } },
      { 'x-auth-token': token },
    );
    if (!created.rule) throw new Error(`cannot create the rule: ${JSON.stringify(created)}`);
    const armSeconds = (performance.now() - started) / 1000;
    await sleep(2000);
    const watching = await perTick();

    // `silent` things made an hour and more old, and due now: the next tick fires them.
    const direct = await openStore({
      databaseUrl: store.databaseUrl,
      schema: store.engine === 'postgres' ? store.schema : undefined,
    });
    const keys = Array.from({ length: silent }, (_, i) => `watched-${i}`);
    const now = Date.now();
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      await direct.db
        .updateTable('things')
        .set({ created_at: now - 7_200_000 })
        .where('thing_key', 'in', chunk)
        .execute();
      await direct.db
        .updateTable('rule_states')
        .set({ due_at: now, watched_since: now - 7_200_000 })
        .where('thing_key', 'in', chunk)
        .execute();
    }
    const cpuBefore = cpuSeconds(server.pid);
    started = performance.now();
    let fired = 0;
    while (fired < silent && performance.now() - started < 120_000) {
      await sleep(200);
      const row = await direct.db
        .selectFrom('alerts')
        .select((eb) => eb.fn.countAll().as('count'))
        .executeTakeFirstOrThrow();
      fired = Number(row.count);
    }
    const fireSeconds = (performance.now() - started) / 1000;
    const fireCpu = cpuSeconds(server.pid) - cpuBefore;
    await direct.close();

    console.log(
      table([
        ['what', 'server CPU ms per tick', 'vs baseline'],
        ['baseline: idle, no no_data rule', idle.toFixed(2), '1.00x'],
        [`no_data rule watching ${count} things, none due`, watching.toFixed(2), `${(watching / idle).toFixed(2)}x`],
      ]),
    );
    console.log(
      table([
        ['what', 'figure'],
        [`arming the rule's ${count} watches (rule create answered in)`, `${armSeconds.toFixed(2)} s`],
        [`${silent} things falling silent at once: fired`, `${fired} alerts in ${fireSeconds.toFixed(1)} s`],
        ['server CPU per silence fired', `${((fireCpu / Math.max(fired, 1)) * 1e6).toFixed(0)} us`],
      ]),
    );
  } finally {
    await server.stop();
    await store.dispose();
  }
}
