/**
 * The first minutes of a new install in a real browser (docs/console.md, "First steps"): a fresh
 * server's Overview and Things say what to do next; `Connect a device` makes a key pair and shows a curl
 * command that, run as shown, makes the first event appear live; `Start a demo` runs simulated machines
 * that `Stop the demo` stops.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, routeRealtime, screenshot, signedInTab } from '../support/browser.ts';
import { userWithAbilities } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const run = promisify(execFile);

for (const store of STORES) {
  describe(`the console's first run in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    const problems: string[][] = [];

    before(async () => {
      [api, browser] = await Promise.all([
        startServer(store, { env: async () => ({ MQTT_PORT: String(await freePort()) }) }),
        launchBrowser(),
      ]);
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    const signedIn = (path: string): Promise<Page> =>
      signedInTab(browser, `${api.url}${path}`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, problems);

    it('when nothing is connected yet then the Overview says so and offers Connect a device and Start a demo', async () => {
      const page = await signedIn('/console/');
      await page.getByRole('heading', { name: 'No things yet', exact: true }).waitFor();
      await page.getByRole('link', { name: 'Connect a device', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Start a demo', exact: true }).waitFor();
      await assertAccessible(page, 'the empty overview');
      await screenshot(page, `${store.name}-first-run-overview`);
      await page.goto(`${api.url}/console/things`);
      await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
      await page.getByRole('link', { name: 'Connect a device', exact: true }).waitFor();
      await screenshot(page, `${store.name}-first-run-things`);
      for (const [path, title, next] of [
        ['rules', 'No rules yet', 'New rule'],
        ['key-pairs', 'No key pairs yet', 'Connect a device'],
        ['alerts', 'No alerts', 'rules'],
      ] as const) {
        await page.goto(`${api.url}/console/${path}`);
        const empty = page
          .locator('.empty-state')
          .filter({ has: page.getByRole('heading', { name: title, exact: true }) });
        await empty.getByRole(next === 'New rule' ? 'button' : 'link', { name: next, exact: true }).waitFor();
      }
      // Nothing to page through or to comment on.
      assert.equal(await page.getByText(/ · 0 alerts$/).count(), 0, 'no pager of no alerts');
      assert.equal(await page.getByLabel('Comment', { exact: true }).count(), 0, 'no comment without alerts');
      await page.getByLabel('Status', { exact: true }).selectOption({ label: 'Open' });
      await page.getByRole('heading', { name: 'No open alerts', exact: true }).waitFor();
      await page.context().close();
    });

    it('when a role may only read rules then the Rules page offers neither New rule nor Edit', async () => {
      const token = await api.adminToken();
      const made = await api.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'Hot', condition: 'temperature > 90', trigger: 'every_event' } },
      });
      assert.equal(made.status, 200, made.text);
      const reader = await userWithAbilities(api, token, [31]);
      const page = await signedInTab(browser, `${api.url}/console/rules`, reader, problems);
      await page.getByRole('cell', { name: 'Hot', exact: true }).waitFor();
      assert.equal(await page.getByRole('button', { name: /^(New rule|Edit)/ }).count(), 0);
      await page.context().close();
    });

    it("when the guide's curl command is run as shown then the first event is announced live", async () => {
      const page = await signedIn('/console/');
      await page.getByRole('link', { name: 'Connect a device', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Connect a device', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Create key pair', exact: true }).click();
      const curl = page.getByRole('figure', { name: 'With curl (HTTP)' }).locator('pre');
      await curl.waitFor();
      const command = (await curl.textContent()) ?? '';
      assert.match(
        command,
        /^curl -s -w ' HTTP %\{http_code\}\\n' -X POST 'http:\/\/127\.0\.0\.1:\d+\/api\/v3\/things\/register\.json'/,
      );
      await page.getByRole('figure', { name: 'With mosquitto_pub (MQTT)' }).waitFor();
      for (const sdk of ['Python', 'C', 'Go', 'Java', 'Ruby']) {
        await page.getByRole('figure', { name: `Settings for the ${sdk} SDK` }).waitFor();
      }
      const status = page.getByRole('status').filter({ hasText: 'my-first-device' });
      await status.filter({ hasText: 'Waiting for the first event' }).waitFor();
      await assertAccessible(page, 'the guide');
      await screenshot(page, `${store.name}-first-run-connect`);

      // What the page shows, run by a shell as a person would paste it.
      const { stdout } = await run('/bin/sh', ['-c', command]);
      // Each answer on a line of its own, with its status.
      assert.deepEqual(stdout.split('\n'), ['{} HTTP 200', '{} HTTP 200', ''], stdout);
      await status.filter({ hasText: 'First event received from my-first-device' }).waitFor();
      assert.match((await status.textContent()) ?? '', /temperature 21\.5/);
      await screenshot(page, `${store.name}-first-run-first-event`);
      await page.getByRole('link', { name: 'Open my-first-device', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'my-first-device', exact: true }).waitFor();
      await page.context().close();
    });

    it('when the first event is sent while the realtime connection is lost then it is announced once the connection is back', async (t) => {
      const page = await signedIn('/console/connect');
      const route = await routeRealtime(t, page);
      await page.getByRole('button', { name: 'Create key pair', exact: true }).click();
      await page.getByLabel('Thing key', { exact: true }).fill('cellar-sensor');
      const curl = page.getByRole('figure', { name: 'With curl (HTTP)' }).locator('pre');
      await curl.filter({ hasText: 'cellar-sensor' }).waitFor();
      const status = page.getByRole('status').filter({ hasText: 'cellar-sensor' });
      await status.filter({ hasText: 'Waiting for the first event' }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      await route.drop();
      await page.getByRole('status').filter({ hasText: 'Connection lost' }).waitFor();
      await run('/bin/sh', ['-c', (await curl.textContent()) ?? '']);
      route.allow = true;
      await status.filter({ hasText: 'First event received from cellar-sensor' }).waitFor({ timeout: 30_000 });
      assert.match((await status.textContent()) ?? '', /temperature 21\.5/);
      await page.context().close();
    });

    it('when a demo is started from an organisation without things then simulated machines appear, until it is stopped', async () => {
      const token = await api.adminToken();
      // A child organisation starts empty, as a new install does.
      const child = await api.request('POST', '/api/v3/organisations', {
        token,
        body: { organisation: { name: 'Fresh plant' } },
      });
      assert.equal(child.status, 200, child.text);
      const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      await page.goto(`${api.url}/console/`);
      await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await page.getByLabel('Organisation key', { exact: true }).fill(child.body.organisation.organisation_key);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('button', { name: 'Start a demo', exact: true }).click();
      const notice = page.getByRole('status').filter({ hasText: 'A demo is running' });
      await notice.waitFor();
      assert.match((await notice.textContent()) ?? '', /not real devices/);
      await page.getByRole('figure', { name: 'Things', exact: true }).filter({ hasText: /^5$/ }).waitFor();
      await screenshot(page, `${store.name}-first-run-demo`);
      await page.getByRole('button', { name: 'Stop the demo', exact: true }).click();
      await notice.waitFor({ state: 'detached' });
      const childToken = await api.signIn(ADMIN_EMAIL, ADMIN_PASSWORD, child.body.organisation.organisation_key);
      const demo = await api.request('GET', '/api/v3/demo', { token: childToken });
      assert.equal(demo.body.demo.running, false);
      await page.close();
    });

    it('when the journeys are done then no page broke the Content-Security-Policy or threw', () => {
      assert.deepEqual(problems.flat(), []);
    });
  });
}
