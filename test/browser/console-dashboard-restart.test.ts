/**
 * A full-screen dashboard on a wall screen outlives a server restart (docs/console.md, "Dashboards"):
 * the server process is stopped and started again on the same port and store while the page is open,
 * and the page connects again by itself and shows what devices send to the new process, without
 * anyone touching it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot, watchProblems } from '../support/browser.ts';
import { signIn } from '../support/console-session.ts';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'wall@example.com', THINGBASE_ADMIN_PASSWORD: 'wall screen password' };

describe('a full-screen dashboard across a server restart [sqlite]', { skip: browserSkip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-restart-'));
  let env: Record<string, string>;
  let server: ServerProcess | undefined;
  let browser: Browser;
  let page: Page;
  before(async () => {
    env = { ...ADMIN, PORT: String(await freePort()), DATABASE_URL: `sqlite:${join(dir, 'thingbase.db')}` };
    [server, browser] = await Promise.all([serveProcess(env), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    if (server) await stopProcess(server.child);
    rmSync(dir, { recursive: true, force: true });
  });

  it('when the server restarts then the page connects again by itself and shows the new process’s events', {
    timeout: 120_000,
  }, async () => {
    const url = (server as ServerProcess).url;
    const signedIn = await call(url, 'POST', '/api_sign_in', {
      body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
    });
    const token = signedIn.body.auth_token as string;
    const pair = (await call(url, 'POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'wall' } } })).body
      .key_pair as KeyPair;
    const device = new Device(url, pair);
    assert.equal((await device.register({ thing_key: 'kiln-1' })).status, 200);
    assert.equal((await device.event({ thing_key: 'kiln-1', data: { temp: 700 } })).status, 200);
    const made = await call(url, 'POST', '/api/v3/dashboards', {
      token,
      body: {
        dashboard: {
          name: 'Kilns',
          widgets: [
            {
              type: 'value',
              title: 'Kiln',
              layout: { x: 0, y: 0, w: 4, h: 2 },
              thing_key: 'kiln-1',
              metric: 'temp',
            },
          ],
        },
      },
    });
    assert.equal(made.status, 200, made.text);
    const key = made.body.dashboard.dashboard_key as string;

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(30_000);
    const problems = watchProblems(page);
    await page.goto(`${url}/console/dashboards/${encodeURIComponent(key)}/full`);
    await signIn(page, ADMIN.THINGBASE_ADMIN_EMAIL, ADMIN.THINGBASE_ADMIN_PASSWORD);
    const kiln = page.getByRole('region', { name: 'Kiln', exact: true }).locator('output');
    await kiln.filter({ hasText: /^700$/ }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();

    await stopProcess((server as ServerProcess).child);
    server = undefined;
    await page
      .getByRole('status')
      .filter({ hasText: /reconnecting/i })
      .waitFor();
    server = await serveProcess(env);
    assert.equal(server.url, url, 'the same address');
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    assert.equal((await device.event({ thing_key: 'kiln-1', data: { temp: 812 } })).status, 200);
    await kiln.filter({ hasText: /^812$/ }).waitFor();
    assert.equal(await page.getByRole('navigation').count(), 0, 'still full screen');
    await screenshot(page, 'sqlite-dashboards-after-restart');
    // Requests refused while the server was down are the browser's to report, not the page's errors.
    assert.deepEqual(
      problems.filter((p) => !/Failed to load resource|ERR_CONNECTION_REFUSED|WebSocket/i.test(p)),
      [],
    );
    await context.close();
  });
});
