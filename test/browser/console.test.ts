/**
 * The console's journeys in a real browser against a real server (docs/console.md, "Tests"): sign-in,
 * the things table and its live updates, sign-out, and what keeps the token safe.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot, watchProblems } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const SECTIONS = ['Things', 'Alerts', 'Rules', 'Key pairs', 'Users', 'Audit trail'];

for (const store of STORES) {
  describe(`the console in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let problems: string[];
    /** Every URL the page asked for, to check that no token ever appears in one. */
    const urls: string[] = [];
    const shot = (name: string) => screenshot(page, `${store.name}-${name}`);

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      page = await context.newPage();
      problems = watchProblems(page);
      page.on('request', (request) => urls.push(request.url()));
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function signIn(email = ADMIN_EMAIL, password = ADMIN_PASSWORD) {
      await page.getByLabel('Email', { exact: true }).fill(email);
      await page.getByLabel('Password', { exact: true }).fill(password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    }

    /** The token the page keeps in its sessionStorage (the test's TypeScript has no DOM types). */
    const sessionToken = () =>
      page.evaluate('JSON.parse(globalThis.sessionStorage.getItem("thingbase.session") ?? "{}").token') as Promise<
        string | undefined
      >;

    it('when / is opened then the sign-in page comes, and a wrong password shows the API message', async () => {
      await page.goto(`${api.url}/`);
      assert.equal(new URL(page.url()).pathname, '/console/');
      await page.getByLabel('Organisation key', { exact: true }).waitFor();
      await signIn(ADMIN_EMAIL, 'not the password');
      const refused = await api.request('POST', '/api_sign_in', {
        body: { email: ADMIN_EMAIL, password: 'not the password' },
      });
      await page.getByRole('alert').filter({ hasText: refused.body.message }).waitFor();
      await shot('sign-in-refused');
    });

    it('when signed in then the navigation names every section, the things table lists things, and search narrows it', async () => {
      const token = await api.adminToken();
      const pumps = [
        await createThing(api, token, { name: 'Pump north' }),
        await createThing(api, token, { name: 'Pump south' }),
      ];
      await createThing(api, token, { name: 'Boiler <b>east</b>' });
      await signIn();
      const navigation = page.getByRole('navigation', { name: 'Main' });
      for (const name of SECTIONS) await navigation.getByRole('link', { name, exact: true }).waitFor();
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
      for (const header of ['Name', 'Key', 'Status', 'Last event']) {
        await page.getByRole('columnheader', { name: header, exact: true }).waitFor();
      }
      // Names are text, never HTML.
      await page.getByRole('link', { name: 'Boiler <b>east</b>', exact: true }).waitFor();
      await page.getByRole('searchbox', { name: 'Search things', exact: true }).fill('pump');
      await page.getByRole('row').filter({ hasText: 'Boiler' }).waitFor({ state: 'detached' });
      for (const pump of pumps) await page.getByRole('row').filter({ hasText: pump.thing_key }).waitFor();
      await shot('things-searched');
    });

    it('when a device sends an event then its row turns Online with a last event, without a reload', async () => {
      const token = await api.adminToken();
      const thing = await createThing(api, token, { name: `Pump ${unique('live')}` });
      await page.getByRole('searchbox', { name: 'Search things', exact: true }).fill(thing.name);
      const row = page.getByRole('row').filter({ hasText: thing.thing_key });
      await row.getByRole('cell', { name: 'Offline', exact: true }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      const loaded = page.url();
      const device = new Device(api.url, await createKeyPair(api, token));
      const sent = await device.event({ thing_key: thing.thing_key, data: { temperature: 41.7 } });
      assert.equal(sent.status, 200, sent.text);
      await row.getByRole('cell', { name: 'Online', exact: true }).waitFor();
      const lastEvent = await row.getByRole('cell').nth(3).textContent();
      assert.match(lastEvent ?? '', /\d/, 'the last event time is shown');
      assert.equal(page.url(), loaded);
      await shot('things-live');
    });

    it('when the token stops working then the next call brings the sign-in page back', async () => {
      const token = await sessionToken();
      assert.ok(token);
      await api.request('DELETE', '/api_sign_out', { token });
      await page.reload();
      await page.getByRole('status').filter({ hasText: 'Your session has ended' }).waitFor();
      await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    });

    it('when Sign out is pressed then the API revokes the token and the sign-in page comes back', async () => {
      await signIn();
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      const token = await sessionToken();
      assert.ok(token);
      const signOut = page.waitForRequest((r) => r.url().endsWith('/api_sign_out') && r.method() === 'DELETE');
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await signOut;
      await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
      const after = await api.request('GET', '/api/v3/things', { token });
      assert.equal(after.status, 401, 'the token is revoked');
      assert.equal(await sessionToken(), undefined, 'and forgotten');
      await shot('signed-out');
    });

    it('when the journeys are done then no URL carried a token and the page broke no Content-Security-Policy', () => {
      assert.ok(urls.length > 5);
      for (const url of urls) assert.doesNotMatch(url, /token=/i, url);
      assert.deepEqual(problems, []);
    });
  });
}
