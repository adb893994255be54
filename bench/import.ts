/**
 * `npm run bench -- import [--things 10000] [--sample 500] [--store sqlite|postgres]`
 * Bulk provisioning: `--things` things in one CSV request to POST /api/v3/things/import, next to a
 * baseline measured in the same run: `--sample` things created one request at a time with
 * POST /api/v3/things (what a script without the import endpoint does), as things per second.
 */
import { request } from 'undici';
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

export async function run(args: string[]): Promise<void> {
  const count = Number(option(args, 'things', '10000'));
  const sample = Number(option(args, 'sample', '500'));
  const store = benchStore(option(args, 'store', 'sqlite'));
  console.log(`import benchmark: ${describeMachine()}; store ${store.engine}; ${count} things; sample ${sample}`);
  const server = await startThingbase(store, benchMqttPort());
  try {
    const token = (await postJson(server.url, '/api_sign_in', BENCH_ADMIN)).auth_token as string;
    const headers = { 'x-auth-token': token, 'content-type': 'application/json' };
    const templates = await request(`${server.url}/api/v3/thing_templates`, { headers: { 'x-auth-token': token } });
    const template = ((await templates.body.json()) as { thing_templates: { thing_template_key: string }[] })
      .thing_templates[0]?.thing_template_key;

    let cpu = cpuSeconds(server.pid);
    let started = performance.now();
    for (let i = 0; i < sample; i++) {
      const response = await request(`${server.url}/api/v3/things`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          thing: { thing_key: `one-${i}`, name: `machine ${i}`, tags: 'pump', thing_template_key: template },
        }),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`POST /api/v3/things answered ${response.statusCode}: ${text}`);
    }
    const oneSeconds = (performance.now() - started) / 1000;
    const oneCpu = cpuSeconds(server.pid) - cpu;

    const csv = ['thing_key,name,tags,user_defined_properties.site,user_defined_properties.floor'];
    for (let i = 0; i < count; i++) csv.push(`bulk-${i},machine ${i},"pump,hall-${i % 7}",Pune,${i % 7}`);
    cpu = cpuSeconds(server.pid);
    started = performance.now();
    const response = await request(`${server.url}/api/v3/things/import`, {
      method: 'POST',
      headers: { 'x-auth-token': token, 'content-type': 'text/csv' },
      body: `${csv.join('\n')}\n`,
    });
    const answer = (await response.body.json()) as { created: number; failed: unknown[] };
    const bulkSeconds = (performance.now() - started) / 1000;
    const bulkCpu = cpuSeconds(server.pid) - cpu;
    if (response.statusCode !== 200 || answer.created !== count) {
      throw new Error(`the import answered ${response.statusCode}: ${JSON.stringify(answer).slice(0, 500)}`);
    }

    const oneRate = sample / oneSeconds;
    const bulkRate = count / bulkSeconds;
    console.log(
      table([
        ['what', 'things', 'seconds', 'things/s', 'server CPU ms/thing', 'vs baseline'],
        [
          'baseline: POST /api/v3/things, one at a time',
          sample,
          oneSeconds.toFixed(2),
          oneRate.toFixed(0),
          ((oneCpu / sample) * 1000).toFixed(3),
          '1.00x',
        ],
        [
          'POST /api/v3/things/import, one CSV request',
          count,
          bulkSeconds.toFixed(2),
          bulkRate.toFixed(0),
          ((bulkCpu / count) * 1000).toFixed(3),
          `${(bulkRate / oneRate).toFixed(1)}x`,
        ],
      ]),
    );
  } finally {
    await server.stop();
    await store.dispose();
  }
}
