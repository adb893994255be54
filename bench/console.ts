/**
 * `npm run bench -- console [--things 10000] [--points 100000] [--rounds 5] [--store sqlite|postgres]`
 * The console (docs/console.md, "Performance") in Debian's Chromium, against a server of this
 * checkout holding `--things` things:
 * - the JavaScript a first visit downloads, compressed as served, next to the API documentation page
 *   (/docs, Swagger UI) of the same server;
 * - the time from pressing `Sign in` to the first row of the things table, next to the time of the
 *   two API calls it makes (sign-in and the first page of things) from Node;
 * - the time uPlot (the console's chart) takes to draw `--points` points of two series, next to drawing
 *   the same points as one bare canvas path;
 * - a thing's page receiving `--rate` events a second for 10 seconds: the points its live chart shows
 *   against the events the device sent, and how long after the last one the chart had it;
 * - with `--groups` groups (1000) and `--alerts` alerts (100000) stored as well, each page's time from
 *   its link to its content, next to the page's API calls made at once from Node (console-pages.ts).
 * Run `npm run build` first (it builds the console).
 */

import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page, Response } from 'playwright-core';
import { request } from 'undici';
import { createServer } from '../src/app.ts';
import { loadConfig } from '../src/core/config.ts';
import { launchBrowser } from '../test/support/browser.ts';
import { Device } from '../test/support/device.ts';
import { pageTimes, seedPages } from './console-pages.ts';
import { describeMachine, median, option, table } from './support.ts';

const EMAIL = 'bench@example.com';
const PASSWORD = 'benchmark password';

/** Bytes of JavaScript the page downloaded (as sent: compressed when it was), and their decoded size. */
async function javascriptOf(page: Page, url: string): Promise<{ sent: number; decoded: number; files: number }> {
  const responses: Response[] = [];
  const listener = (response: Response) => {
    if (/javascript/.test(response.headers()['content-type'] ?? '')) responses.push(response);
  };
  page.on('response', listener);
  await page.goto(url, { waitUntil: 'networkidle' });
  page.off('response', listener);
  let sent = 0;
  let decoded = 0;
  for (const response of responses) {
    sent += (await response.request().sizes()).responseBodySize;
    decoded += (await response.body()).length;
  }
  return { sent, decoded, files: responses.length };
}

async function apiSignInAndFirstPage(url: string): Promise<number> {
  const started = performance.now();
  const signIn = await request(`${url}/api_sign_in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  const { auth_token: token } = (await signIn.body.json()) as { auth_token: string };
  const things = await request(`${url}/api/v3/things?page=1&per=50&order_by=name&order=asc`, {
    headers: { 'x-auth-token': token, 'content-type': 'application/json' },
  });
  await things.body.json();
  return performance.now() - started;
}

/** Milliseconds to draw `points` points of two series with `draw`, measured in the page. */
function drawInPage(page: Page, points: number, how: 'uplot' | 'canvas'): Promise<number> {
  return page.evaluate(
    ([count, kind]) => {
      const g = globalThis as any;
      const box = g.document.getElementById('chart');
      box.innerHTML = '';
      const x = new Float64Array(count as number);
      const a = new Float64Array(count as number);
      const b = new Float64Array(count as number);
      const start = 1_700_000_000;
      for (let i = 0; i < (count as number); i++) {
        x[i] = start + i;
        a[i] = 20 + Math.sin(i / 500) * 5 + (i % 7) / 10;
        b[i] = 1 + Math.cos(i / 300) * 2;
      }
      const began = g.performance.now();
      if (kind === 'uplot') {
        new g.uPlot(
          {
            width: 1100,
            height: 320,
            scales: { x: { time: true } },
            series: [{}, { stroke: 'blue' }, { stroke: 'red' }],
          },
          [x, a, b],
          box,
        );
      } else {
        const canvas = g.document.createElement('canvas');
        canvas.width = 1100;
        canvas.height = 320;
        box.appendChild(canvas);
        const context = canvas.getContext('2d');
        for (const [series, colour] of [
          [a, 'blue'],
          [b, 'red'],
        ] as const) {
          context.beginPath();
          context.strokeStyle = colour;
          for (let i = 0; i < (count as number); i++) {
            const px = (i / (count as number)) * 1100;
            const py = 320 - ((series[i] as number) + 5) * 10;
            if (i === 0) context.moveTo(px, py);
            else context.lineTo(px, py);
          }
          context.stroke();
        }
      }
      // Until the frame holding the drawing is painted.
      return new Promise<number>((done) =>
        g.requestAnimationFrame(() => g.requestAnimationFrame(() => done(g.performance.now() - began))),
      );
    },
    [points, how] as const,
  );
}

export async function run(args: string[]): Promise<void> {
  const things = Number(option(args, 'things', '10000'));
  const points = Number(option(args, 'points', '100000'));
  const rounds = Number(option(args, 'rounds', '5'));
  const store = option(args, 'store', 'sqlite');
  const rate = Number(option(args, 'rate', '50'));
  const groups = Number(option(args, 'groups', '1000'));
  const alerts = Number(option(args, 'alerts', '100000'));
  const config = loadConfig({});
  if (!existsSync(join(config.consoleDir, 'index.html'))) throw new Error('the console is not built: npm run build');
  console.log(
    `console benchmark: ${describeMachine()}; store ${store}; ${things} things; ${points} points; ${rounds} rounds`,
  );
  const server = await createServer(
    loadConfig({
      DATABASE_URL:
        store === 'postgres'
          ? (process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
          : `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-bench-')), 'bench.db')}`,
      ...(store === 'postgres' ? { DATABASE_SCHEMA: `tb_bench_${randomBytes(4).toString('hex')}` } : {}),
      THINGBASE_ADMIN_EMAIL: EMAIL,
      THINGBASE_ADMIN_PASSWORD: PASSWORD,
      THINGBASE_PASSWORD_HASH_COST: '1024',
      LOG_LEVEL: 'warn',
      MQTT_PORT: '0',
    }),
  );
  const url = await server.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launchBrowser();
  try {
    const signedIn = await request(`${url}/api_sign_in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    const { auth_token: token } = (await signedIn.body.json()) as { auth_token: string };
    const rows = Array.from({ length: things }, (_, i) => ({
      thing_key: `pump-${i}`,
      name: `Pump ${i}`,
      tags: 'bench',
    }));
    const imported = await request(`${url}/api/v3/things/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': token },
      body: JSON.stringify({ things: rows }),
    });
    if (imported.statusCode !== 200) throw new Error(`import failed: ${await imported.body.text()}`);
    await imported.body.dump();

    // 1. JavaScript of a first visit, in a fresh context (no cache).
    const sizes: (string | number)[][] = [['page', 'JS files', 'KB as sent', 'KB decoded', 'sent vs /docs']];
    const firstVisit = async (path: string) => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const figures = await javascriptOf(page, `${url}${path}`);
      await context.close();
      return figures;
    };
    const docs = await firstVisit('/docs');
    const consolePage = await firstVisit('/console/');
    const kb = (bytes: number) => (bytes / 1024).toFixed(1);
    sizes.push(['/docs (Swagger UI), baseline', docs.files, kb(docs.sent), kb(docs.decoded), '1.00x']);
    sizes.push([
      '/console/ (budget 60 KB sent)',
      consolePage.files,
      kb(consolePage.sent),
      kb(consolePage.decoded),
      `${(consolePage.sent / docs.sent).toFixed(2)}x`,
    ]);
    console.log(`\nFirst visit\n${table(sizes)}`);

    // 2. Sign-in to the things table.
    const console_: number[] = [];
    const api: number[] = [];
    for (let round = 0; round < rounds; round++) {
      api.push(await apiSignInAndFirstPage(url));
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${url}/console/things`, { waitUntil: 'networkidle' });
      await page.getByLabel('Email', { exact: true }).fill(EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      const started = await page.evaluate(() => (globalThis as any).performance.now());
      const shown = page.waitForFunction(
        () => (globalThis as any).document.querySelector('tbody tr td a') !== null,
        undefined,
        { polling: 'raf' },
      );
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await shown;
      console_.push((await page.evaluate(() => (globalThis as any).performance.now())) - started);
      const total = await page.getByText(`· ${things} things`).count();
      if (total !== 1) throw new Error('the things table does not show the number of things');
      await context.close();
    }
    const apiMs = median(api);
    const consoleMs = median(console_);
    console.log(
      `\nSign-in to the things table (${things} things; median of ${rounds})\n${table([
        ['what', 'median ms', 'vs baseline'],
        ['baseline: POST /api_sign_in + GET /api/v3/things (first page) from Node', apiMs.toFixed(0), '1.00x'],
        [
          'console: Sign in pressed -> first row shown (budget 1,000 ms)',
          consoleMs.toFixed(0),
          `${(consoleMs / apiMs).toFixed(2)}x`,
        ],
      ])}`,
    );

    // 3. The chart's drawing of many points.
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.setContent('<div id="chart"></div>');
    const require = createRequire(import.meta.url);
    await page.addStyleTag({ content: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8') });
    await page.addScriptTag({ content: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8') });
    const bare: number[] = [];
    const uplot: number[] = [];
    for (let round = 0; round < rounds; round++) {
      bare.push(await drawInPage(page, points, 'canvas'));
      uplot.push(await drawInPage(page, points, 'uplot'));
    }
    await context.close();
    const bareMs = median(bare);
    const uplotMs = median(uplot);
    console.log(
      `\nChart of ${points} points, two series (median of ${rounds}, until painted)\n${table([
        ['what', 'median ms', 'vs baseline'],
        ['baseline: one bare canvas path per series', bareMs.toFixed(0), '1.00x'],
        ['uPlot, as the console draws (budget 500 ms)', uplotMs.toFixed(0), `${(uplotMs / bareMs).toFixed(2)}x`],
      ])}`,
    );

    // 4. A thing's page under a stream of live events.
    const pair = await request(`${url}/api/v3/key_pairs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-auth-token': token },
      body: JSON.stringify({ key_pair: { name: 'bench device' } }),
    });
    const device = new Device(url, ((await pair.body.json()) as { key_pair: any }).key_pair);
    await device.register({ thing_key: 'live-1', name: 'Live pump' });
    const live = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const thingPage = await live.newPage();
    await thingPage.goto(`${url}/console/`);
    await thingPage.getByLabel('Email', { exact: true }).fill(EMAIL);
    await thingPage.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await thingPage.getByRole('button', { name: 'Sign in', exact: true }).click();
    await thingPage.getByRole('navigation', { name: 'Main' }).waitFor();
    await thingPage.goto(`${url}/console/things/live-1`);
    await thingPage.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    await thingPage.getByText('No numeric values in this range.').waitFor();
    const seconds = 10;
    const sent = rate * seconds;
    const began = performance.now();
    for (let i = 0; i < sent; i++) {
      const due = began + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
      void device.event({ thing_key: 'live-1', data: { temperature: 20 + (i % 50) / 10, pressure: i } });
    }
    const lastSent = performance.now();
    const caption = thingPage.getByText(new RegExp(`^${sent} points`));
    await caption.waitFor({ timeout: 15_000 }).catch(() => undefined);
    const lag = performance.now() - lastSent;
    const shownText = (await thingPage.locator('.chart-caption').textContent()) ?? '';
    const shown = Number(/^(\d+) points/.exec(shownText)?.[1] ?? 0);
    await live.close();
    console.log(
      `\nLive chart at ${rate} events/s for ${seconds} s\n${table([
        ['what', 'events', 'vs baseline'],
        ['baseline: events the device sent', sent, '1.00x'],
        ['points on the chart', shown, `${(shown / sent).toFixed(2)}x`],
        ['last one on the chart, ms after it was sent', lag.toFixed(0), ''],
      ])}`,
    );

    // 5. Each page after its link is pressed, with groups and alerts stored besides the things.
    const seeded = performance.now();
    await seedPages(url, token, groups, alerts);
    console.log(
      `\nStored ${groups} groups and ${alerts} alerts in ${((performance.now() - seeded) / 1000).toFixed(0)} s`,
    );
    const times = await pageTimes(browser, url, { email: EMAIL, password: PASSWORD }, rounds, alerts);
    console.log(
      `\nEach page, link pressed -> content shown (median of ${rounds}; budget 1,000 ms), beside its API calls made at once from Node\n${times}`,
    );
  } finally {
    await browser.close();
    await server.close();
  }
}
