/**
 * `npm run bench -- dashboard-page [--store sqlite|postgres] [--things 1000] [--rate 1000] [--seconds 60]
 *   [--rounds 3]`
 * A dashboard in Debian's Chromium (docs/console.md, "Dashboards"; docs/benchmarks.md): 12 widgets
 * over `--things` things of one template (a fleet average over 30 days in 15-minute buckets and a fleet
 * maximum, a line per thing for four things, a map, a things table, the alerts, four values, a gauge, a text):
 * - opened: the time from pressing its link until every widget has drawn (the charts' canvases,
 *   the values, the table's rows, the map), beside the API calls that opening made, replayed from Node
 *   at once with the same user's token (the median of `--rounds`);
 * - live: with a device sending `--rate` events a second spread over the things for `--seconds`,
 *   the share of the time the page's main thread was busy (Chrome's Performance.getMetrics
 *   TaskDuration), beside the same page open with nothing arriving, and its JavaScript heap at the
 *   start and the end (the full-screen page, as a wall screen shows it).
 * Each thing has an event an hour over the last day before the page is opened, so the fleet average
 * reads a day's rollups of every thing in its 30 days.
 */
import type { Page, Request } from 'playwright-core';
import { request } from 'undici';
import { launchBrowser } from '../test/support/browser.ts';
import { Device } from '../test/support/device.ts';
import {
  BENCH_ADMIN,
  benchMqttPort,
  benchStore,
  describeMachine,
  importBoilers,
  median,
  option,
  postJson,
  startThingbase,
  table,
} from './support.ts';

const HOUR = 3_600_000;

/** The dashboard: 12 widgets over the template's things, 30 days shared. */
function dashboardOf(templateKey: string, keys: string[]) {
  const source = { thing_template_key: templateKey };
  const value = (i: number) => ({
    type: 'value',
    title: `Boiler ${i}`,
    thing_key: keys[i],
    metric: 'temperature',
    unit: '°C',
    thresholds: [
      { from: 0, color: '#15803d' },
      { from: 45, color: '#b91c1c' },
    ],
    layout: { x: 3 * i, y: 9, w: 3, h: 2 },
  });
  return {
    name: 'Plant',
    time_range: { last: '30d' },
    widgets: [
      {
        type: 'timeseries',
        title: 'Fleet average',
        source,
        metrics: ['temperature'],
        aggregate: 'avg',
        layout: { x: 0, y: 0, w: 6, h: 4 },
      },
      {
        type: 'timeseries',
        title: 'Four boilers',
        source: { thing_keys: keys.slice(0, 4) },
        metrics: ['temperature'],
        layout: { x: 6, y: 0, w: 6, h: 4 },
      },
      {
        type: 'timeseries',
        title: 'Fleet maximum pressure',
        source,
        metrics: ['pressure'],
        aggregate: 'max',
        layout: { x: 0, y: 14, w: 12, h: 3 },
      },
      { type: 'map', title: 'Where', source, layout: { x: 0, y: 4, w: 6, h: 5 } },
      { type: 'things', title: 'Boilers', source, metrics: ['temperature'], layout: { x: 6, y: 4, w: 6, h: 5 } },
      ...[0, 1, 2, 3].map(value),
      { type: 'alerts', title: 'Open alerts', source, layout: { x: 0, y: 11, w: 6, h: 3 } },
      {
        type: 'gauge',
        title: 'Boiler 0 gauge',
        thing_key: keys[0],
        metric: 'temperature',
        min: 0,
        max: 100,
        layout: { x: 6, y: 11, w: 3, h: 3 },
      },
      { type: 'text', title: 'Notes', text: '**Call maintenance** above 45 °C.', layout: { x: 9, y: 11, w: 3, h: 3 } },
    ],
  };
}

/** Resolves once every widget has drawn what it shows (no named functions inside: the page runs it as compiled). */
function drawn(page: Page): Promise<unknown> {
  return page.waitForFunction(
    () => {
      const doc = (globalThis as any).document;
      const widgets = [...doc.querySelectorAll('.widget')];
      const charts = [...doc.querySelectorAll('.widget-timeseries')].every((w: any) => w.querySelector('canvas'));
      const values = [...doc.querySelectorAll('.widget-value output, .widget-gauge output')].every(
        (o: any) => o.textContent !== '\u2013',
      );
      const rows = doc.querySelectorAll('.widget-things tbody tr').length > 0;
      const map = doc.querySelector('.dashboard-map-figure') !== null;
      return widgets.length === 12 && charts && values && rows && map;
    },
    undefined,
    { timeout: 120_000, polling: 20 },
  );
}

async function replay(url: string, token: string, calls: Request[]): Promise<number> {
  const started = performance.now();
  await Promise.all(
    calls.map(async (call) => {
      const answer = await request(url + new URL(call.url()).pathname + new URL(call.url()).search, {
        method: call.method() as 'GET' | 'POST',
        headers: { 'x-auth-token': token, 'content-type': 'application/json' },
        body: call.method() === 'POST' ? (call.postData() ?? undefined) : undefined,
      });
      await answer.body.text();
    }),
  );
  return performance.now() - started;
}

async function busyShare(page: Page, seconds: number): Promise<{ busy: number; heapStart: number; heapEnd: number }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const read = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    const of = (name: string) => metrics.find((m) => m.name === name)?.value ?? 0;
    return { task: of('TaskDuration'), heap: of('JSHeapUsedSize') / 1024 / 1024, at: performance.now() };
  };
  const start = await read();
  await new Promise((done) => setTimeout(done, seconds * 1000));
  const end = await read();
  await cdp.detach();
  return { busy: (end.task - start.task) / ((end.at - start.at) / 1000), heapStart: start.heap, heapEnd: end.heap };
}

/** A device sending `rate` events a second, ten bulks a second, over the things, until stopped. */
function sendLive(device: Device, keys: string[], rate: number): { stop: () => Promise<number> } {
  let running = true;
  let sent = 0;
  const loop = (async () => {
    const perTick = Math.max(1, Math.round(rate / 10));
    while (running) {
      const tick = performance.now();
      const events = Array.from({ length: perTick }, (_, i) => ({
        thing_key: keys[(sent + i) % keys.length] as string,
        data: { temperature: 20 + ((sent + i) % 40), pressure: 1.2 },
      }));
      const answer = await device.event({ events });
      if (answer.status === 200) sent += perTick;
      await new Promise((done) => setTimeout(done, Math.max(0, 100 - (performance.now() - tick))));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return sent;
    },
  };
}

export async function run(args: string[]): Promise<void> {
  const engine = option(args, 'store', 'sqlite');
  const things = Number(option(args, 'things', '1000'));
  const rate = Number(option(args, 'rate', '1000'));
  const seconds = Number(option(args, 'seconds', '60'));
  const rounds = Number(option(args, 'rounds', '3'));
  console.log(
    `dashboard page benchmark: ${describeMachine()}; store ${engine}; ${things} things; ${rate} events/s for ${seconds} s`,
  );
  const store = benchStore(engine);
  const server = await startThingbase(store, benchMqttPort());
  const browser = await launchBrowser();
  try {
    const token = (await postJson(server.url, '/api_sign_in', BENCH_ADMIN)).auth_token as string;
    const headers = { 'x-auth-token': token };
    const { templateKey, keys } = await importBoilers(server.url, headers, things, (n) => ({
      coordinates: [45 + (n % 100) / 20, 5 + Math.floor(n / 100) / 10],
    }));
    const pair = await postJson(server.url, '/api/v3/key_pairs', { key_pair: { name: 'bench' } }, headers);
    const device = new Device(server.url, pair.key_pair);
    const now = Date.now();
    const history = keys.flatMap((thing_key, t) =>
      Array.from({ length: 24 }, (_, h) => ({
        thing_key,
        timestamp: now - (24 - h) * HOUR + t,
        data: { temperature: 20 + ((t + h) % 30), pressure: 1.1 },
      })),
    );
    for (let i = 0; i < history.length; i += 5000) {
      const answer = await device.event({ events: history.slice(i, i + 5000) });
      if (answer.status !== 200) throw new Error(`events: ${answer.status} ${answer.text}`);
    }
    const created = await postJson(
      server.url,
      '/api/v3/dashboards',
      { dashboard: dashboardOf(templateKey, keys) },
      headers,
    );
    const dashboardKey = created.dashboard.dashboard_key as string;

    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    const page = await context.newPage();
    page.setDefaultTimeout(120_000);
    await page.goto(`${server.url}/console/dashboards`);
    await page.getByLabel('Email', { exact: true }).fill(BENCH_ADMIN.email);
    await page.getByLabel('Password', { exact: true }).fill(BENCH_ADMIN.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboards', exact: true }).waitFor();

    const opened: number[] = [];
    const apiCalls: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await page.goto(`${server.url}/console/dashboards`);
      await page.getByRole('heading', { level: 1, name: 'Dashboards', exact: true }).waitFor();
      const calls: Request[] = [];
      const listen = (r: Request) => {
        if (new URL(r.url()).pathname.startsWith('/api/')) calls.push(r);
      };
      page.on('request', listen);
      const started = performance.now();
      await page.getByRole('link', { name: 'Plant', exact: true }).click();
      await drawn(page);
      opened.push(performance.now() - started);
      page.off('request', listen);
      apiCalls.push(await replay(server.url, token, calls));
    }
    console.log('\nOpening the dashboard (12 widgets), link pressed -> every widget drawn; budget 1,500 ms');
    const openedMs = median(opened);
    const apiMs = median(apiCalls);
    console.log(
      table([
        ['what', `median of ${rounds} ms`, 'vs baseline'],
        ['baseline: its API calls replayed from Node at once', apiMs.toFixed(0), '1.00x'],
        ['the page, drawn', openedMs.toFixed(0), `${(openedMs / apiMs).toFixed(2)}x`],
      ]),
    );

    await page.goto(`${server.url}/console/dashboards/${dashboardKey}/full`);
    await drawn(page);
    const quiet = await busyShare(page, Math.min(seconds, 20));
    const live = sendLive(device, keys, rate);
    const busy = await busyShare(page, seconds);
    const sent = await live.stop();
    console.log(`\nFull screen, main thread busy (TaskDuration / wall time); budget a third`);
    console.log(
      table([
        ['what', 'busy share', 'vs baseline', 'JS heap start MB', 'JS heap end MB'],
        [
          'baseline: nothing arriving',
          quiet.busy.toFixed(3),
          '1.00x',
          quiet.heapStart.toFixed(1),
          quiet.heapEnd.toFixed(1),
        ],
        [
          `${(sent / seconds).toFixed(0)} events/s arriving`,
          busy.busy.toFixed(3),
          `${(busy.busy / Math.max(quiet.busy, 0.001)).toFixed(2)}x`,
          busy.heapStart.toFixed(1),
          busy.heapEnd.toFixed(1),
        ],
      ]),
    );
    await context.close();
  } finally {
    await browser.close();
    await server.stop();
    await store.dispose();
  }
}
