/**
 * The console's Key pairs and Alerts pages in a real browser against a real server (docs/console.md):
 * the new secret gone after leaving the console and coming Back (the back/forward cache on, as in a
 * user's browser), the MQTT password and Copy over plain HTTP (not a secure context), Copy refused, and
 * the live alerts list updating only the rows it shows.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  browserSkip,
  holdNextRead,
  launchBrowser,
  routeRealtime,
  screenshot,
  watchProblems,
} from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createRole, unique, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { until } from './until.ts';

/** A name other than localhost for the loopback address: pages opened by it are not a secure context. */
const PLAIN_HOST = 'thingbase.test';
const WAIT = { timeout: 10_000 };

for (const store of STORES) {
  describe(`the console's key pairs and alerts in a browser [${store.name}]`, {
    skip: browserSkip || store.skip,
  }, () => {
    let api: TestServer;
    let browser: Browser;
    /** What each page reported (watchProblems), looked at by the last test. */
    const watched: string[][] = [];

    before(async () => {
      [api, browser] = await Promise.all([
        startServer(store),
        launchBrowser({
          args: [`--host-resolver-rules=MAP ${PLAIN_HOST} 127.0.0.1`],
          // Playwright turns the back/forward cache off; users' browsers have it.
          ignoreDefaultArgs: ['--disable-back-forward-cache'],
        }),
      ]);
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function open(url: string, user = { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }): Promise<Page> {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      watched.push(watchProblems(page));
      await page.goto(url);
      await page.getByLabel('Email', { exact: true }).fill(user.email);
      await page.getByLabel('Password', { exact: true }).fill(user.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      return page;
    }

    /** Creates a key pair with New key pair; answers its secret as the page shows it. */
    async function newKeyPair(page: Page, name: string): Promise<string> {
      await page.getByRole('button', { name: 'New key pair', exact: true }).click();
      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const secret = page.getByRole('figure', { name: 'Secret key', exact: true }).locator('pre');
      await secret.filter({ hasText: /^[0-9a-z]{40}$/ }).waitFor();
      return ((await secret.textContent()) ?? '').trim();
    }

    const plainUrl = (path: string) => `http://${PLAIN_HOST}:${new URL(api.url).port}${path}`;

    it('when a new secret is shown and the user leaves the console and comes Back then the secret is gone', async () => {
      const page = await open(`${api.url}/console/key-pairs`);
      const secret = await newKeyPair(page, 'Line 9');
      await page.goto(`${api.url}/docs`);
      // A page restored from the back/forward cache fires no load event.
      await page.goBack({ waitUntil: 'commit' });
      await page.getByRole('heading', { level: 1, name: 'Key pairs', exact: true }).waitFor();
      await page.getByRole('row').filter({ hasText: 'Line 9' }).waitFor();
      assert.equal(await page.getByText(secret).count(), 0, 'the secret is gone');
      await screenshot(page, `${store.name}-key-pair-after-back`);
    });

    it('when a key pair is made with a role and then deleted after asking then its devices are refused', async () => {
      const token = await api.adminToken();
      const meters = await createRole(api, token, [11, 12, 13, 122]);
      const page = await open(`${api.url}/console/key-pairs`);
      await page.getByRole('button', { name: 'New key pair', exact: true }).click();
      await page.getByLabel('Name', { exact: true }).fill('Meters line');
      await page.getByLabel('Role', { exact: true }).selectOption({ label: meters.name });
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.getByRole('row').filter({ hasText: 'Meters line' }).waitFor();
      const listed = await api.request('GET', '/api/v3/key_pairs', { token, query: { per: 1000 } });
      const pair = listed.body.key_pairs.find((p: { name: string }) => p.name === 'Meters line');
      assert.equal(pair.role_key, meters.role_key);
      // The list says what each pair's devices may do: its role, by name.
      const row = page.getByRole('row').filter({ hasText: 'Meters line' });
      assert.equal(await row.getByRole('cell', { name: meters.name, exact: true }).count(), 1);
      assert.equal(
        await page.getByRole('columnheader', { name: 'Role', exact: true }).count(),
        1,
        'the list has a Role column',
      );
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Meters line' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete the key pair Meters line?', exact: true });
      await dialog.waitFor();
      await screenshot(page, `${store.name}-key-pair-delete`);
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('row').filter({ hasText: 'Meters line' }).waitFor({ state: 'detached' });
      const gone = await api.request('GET', `/api/v3/key_pairs/${pair.key_pair_key}`, { token });
      assert.equal(gone.status, 404);
    });

    describe('over plain HTTP at a name other than localhost', () => {
      /** The key pairs page, not a secure context, with a new secret shown. */
      let page: Page;
      let secret: string;

      it('when a key pair is created then the MQTT settings give its password', async () => {
        page = await open(plainUrl('/console/key-pairs'));
        assert.equal(await page.evaluate('globalThis.isSecureContext'), false, 'not a secure context');
        secret = await newKeyPair(page, 'Line 4');
        const pairs = await api.request('GET', '/api/v3/key_pairs', {
          token: await api.adminToken(),
          query: { search: 'Line 4' },
        });
        const accessKey = pairs.body.key_pairs[0].access_key as string;
        const password = createHmac('sha256', secret).update(accessKey).digest('hex');
        await page
          .getByRole('figure', { name: /^Device settings for MQTT/ })
          .locator('pre')
          .filter({ hasText: `password = ${password}` })
          .waitFor(WAIT);
      });

      it('when Copy secret key is pressed then the secret is copied and the button says so', async () => {
        // What a copy puts on the clipboard is the selection when it happens.
        await page.evaluate(
          'document.addEventListener("copy", () => { globalThis.copied = String(document.getSelection()); })',
        );
        const figure = page.getByRole('figure', { name: 'Secret key', exact: true });
        await figure.getByRole('button', { name: 'Copy secret key', exact: true }).click();
        await figure.getByRole('button', { name: 'Copied', exact: true }).waitFor(WAIT);
        assert.equal(await page.evaluate('globalThis.copied'), secret);
        await screenshot(page, `${store.name}-key-pair-plain-http`);
      });
    });

    it('when the browser refuses to copy then Copy says the text was not copied', async () => {
      const page = await open(`${api.url}/console/key-pairs`);
      await newKeyPair(page, 'Line 5');
      await page.evaluate(`
        navigator.clipboard.writeText = () => Promise.reject(new DOMException('Document is not focused.', 'NotAllowedError'));
        document.execCommand = () => false;
      `);
      const figure = page.getByRole('figure', { name: 'Secret key', exact: true });
      await figure.getByRole('button', { name: 'Copy secret key', exact: true }).click();
      await figure
        .getByRole('alert')
        .filter({ hasText: /^Not copied/ })
        .waitFor(WAIT);
      assert.equal(await figure.getByRole('button', { name: 'Copied' }).count(), 0);
      await screenshot(page, `${store.name}-key-pair-copy-refused`);
    });

    describe('with 60 alerts', () => {
      let token: string;
      /** The alerts as the API lists them, oldest first. */
      let alerts: { alert_key: string; message: string }[];
      let thingKey: string;
      const row = (page: Page, message: string) =>
        page.getByRole('row').filter({ has: page.getByRole('cell', { name: message, exact: true }) });

      before(async () => {
        token = await api.adminToken();
        const device = new Device(api.url, await createKeyPair(api, token));
        thingKey = unique('kiln');
        assert.equal((await device.register({ thing_key: thingKey, name: 'Kiln' })).status, 200);
        const rule = await api.request('POST', '/api/v3/rules', {
          token,
          body: {
            rule: {
              name: 'Hot',
              condition: 'temperature > 40',
              alert_type: 2,
              alert_message: 'Too hot {{temperature}}',
              trigger: 'every_event',
            },
          },
        });
        assert.equal(rule.status, 200, rule.text);
        const now = Date.now();
        const events = Array.from({ length: 60 }, (_, i) => ({
          thing_key: thingKey,
          timestamp: now - (60 - i) * 1000,
          data: { temperature: 100 + i },
        }));
        assert.equal((await device.event({ events })).status, 200);
        const deadline = Date.now() + 15_000;
        for (;;) {
          const listed = await api.request('GET', '/api/v3/alerts', { token, query: { per: 100, order: 'asc' } });
          alerts = listed.body.alerts;
          if (listed.body.total_count === 60 || Date.now() > deadline) break;
          await new Promise((done) => setTimeout(done, 100));
        }
        assert.equal(alerts.length, 60);
      });

      /** The alerts page, opened by the first of the next two tests and kept for the second. */
      let page: Page;

      it('when an alert not on the page shown is cleared elsewhere then the rows and the total stay as the API has them', async () => {
        page = await open(`${api.url}/console/alerts`);
        await page.getByText('Page 1 of 2 · 60 alerts').waitFor();
        await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
        const oldest = alerts[0]!;
        const newest = alerts[59]!;
        assert.equal(
          (await api.request('POST', `/api/v3/alerts/${oldest.alert_key}/clear`, { token, body: {} })).status,
          200,
        );
        // Realtime messages come in order: once the newest alert's change is shown, the oldest's has come.
        assert.equal(
          (await api.request('POST', `/api/v3/alerts/${newest.alert_key}/acknowledge`, { token, body: {} })).status,
          200,
        );
        await row(page, newest.message)
          .getByRole('cell', { name: /^acknowledged( |$)/ })
          .waitFor(WAIT);
        assert.equal(await page.getByText('Page 1 of 2 · 60 alerts').count(), 1, 'the total is the API total');
        assert.equal(await row(page, oldest.message).count(), 0, 'the old alert is not put on page 1');
        assert.equal(await page.getByRole('row').count(), 51, 'a header and 50 alerts');
      });

      it('when an alert on page 2 is acknowledged elsewhere then its row there changes in place', async () => {
        await page.getByRole('button', { name: 'Next', exact: true }).click();
        await page.getByText(/^Page 2 of 2 · /).waitFor();
        const second = alerts[1]!;
        await row(page, second.message).getByRole('cell', { name: 'open', exact: true }).waitFor();
        assert.equal(
          (await api.request('POST', `/api/v3/alerts/${second.alert_key}/acknowledge`, { token, body: {} })).status,
          200,
        );
        await row(page, second.message)
          .getByRole('cell', { name: /^acknowledged( |$)/ })
          .waitFor(WAIT);
        await screenshot(page, `${store.name}-alerts-page-2-live`);
      });

      it('when an alert is acknowledged while the realtime connection is down then the Alerts page shows it once the connection is back', async (t) => {
        const tab = await open(`${api.url}/console/alerts`);
        // Signed in before the reload that puts the realtime connection through the route.
        await tab.getByText(/^Page 1 of 2 · /).waitFor(WAIT);
        const route = await routeRealtime(t, tab);
        await tab.reload();
        const alert = alerts[57]!;
        await row(tab, alert.message).getByRole('cell', { name: 'open', exact: true }).waitFor(WAIT);
        await tab.getByRole('status').filter({ hasText: 'Live' }).waitFor(WAIT);
        await route.drop();
        await tab.getByRole('status').filter({ hasText: 'Connection lost' }).waitFor(WAIT);
        assert.equal(
          (await api.request('POST', `/api/v3/alerts/${alert.alert_key}/acknowledge`, { token, body: {} })).status,
          200,
        );
        route.allow = true;
        await tab.getByRole('status').filter({ hasText: 'Live' }).waitFor({ timeout: 30_000 });
        await row(tab, alert.message)
          .getByRole('cell', { name: /^acknowledged( |$)/ })
          .waitFor(WAIT);
        await tab.context().close();
      });

      it('when a role may read alerts but not change them then no Acknowledge, Clear or Comment is offered', async () => {
        const reader = await userWithAbilities(api, token, [91]);
        const page = await open(`${api.url}/console/alerts`, reader);
        await page.getByText(/^Page 1 of 2 · \d+ alerts$/).waitFor();
        assert.equal(await page.getByRole('button', { name: 'Acknowledge', exact: true }).count(), 0);
        assert.equal(await page.getByRole('button', { name: 'Clear', exact: true }).count(), 0);
        assert.equal(await page.getByLabel('Comment', { exact: true }).count(), 0);
        await screenshot(page, `${store.name}-alerts-read-only`);
      });

      it('when the address asks for a status the list does not offer then it shows them all', async () => {
        const page = await open(`${api.url}/console/alerts?status=all`);
        await page.getByText(/^Page 1 of 2 · 60 alerts$/).waitFor();
        await page
          .getByLabel('Status', { exact: true })
          .getByRole('option', { name: 'All', exact: true, selected: true })
          .waitFor({ state: 'attached' });
      });

      it('when Status is Open and an alert is acknowledged then it leaves the list', async () => {
        const page = await open(`${api.url}/console/alerts`);
        await page.getByLabel('Status', { exact: true }).selectOption('Open');
        const openCount = async () =>
          (await api.request('GET', '/api/v3/alerts', { token, query: { status: 'open' } })).body.total_count as number;
        const before = await openCount();
        await page.getByText(new RegExp(`^Page 1 of \\d+ · ${before} alerts$`)).waitFor();
        const first = page.getByRole('row').nth(1);
        const message = (await first.getByRole('cell').nth(3).textContent()) ?? '';
        assert.match(message, /^Too hot/);
        await first.getByRole('button', { name: 'Acknowledge', exact: true }).click();
        await row(page, message).waitFor({ state: 'detached', ...WAIT });
        assert.equal(await openCount(), before - 1);
        await page.getByText(new RegExp(`^Page 1 of \\d+ · ${before - 1} alerts$`)).waitFor();
        await screenshot(page, `${store.name}-alerts-open-acknowledged`);
      });

      it("when an alert is acknowledged with a comment then its status says who, when and the comment, and its thing's name leads to the thing", async () => {
        const page = await open(`${api.url}/console/alerts?status=open`);
        const first = page.getByRole('row').nth(1);
        await first.getByRole('button', { name: 'Acknowledge', exact: true }).waitFor();
        const message = (await first.getByRole('cell').nth(3).textContent()) ?? '';
        await page.getByLabel('Comment', { exact: true }).fill('Valve checked, <b>fine</b>');
        await page.getByLabel('Status', { exact: true }).selectOption('All');
        const acknowledged = row(page, message);
        await acknowledged.getByRole('button', { name: 'Acknowledge', exact: true }).click();
        await acknowledged.getByRole('cell', { name: /^acknowledged( |$)/ }).waitFor(WAIT);
        const stored = (await api.request('GET', '/api/v3/alerts', { token, query: { per: 100 } })).body.alerts.find(
          (a: { message: string }) => a.message === message,
        );
        assert.equal(stored.comment, 'Valve checked, <b>fine</b>');
        assert.equal(stored.acknowledged_by, ADMIN_EMAIL);
        // The status says who acknowledged it and when, and the comment, as text.
        const status = acknowledged.getByRole('cell', { name: /^acknowledged / });
        await status.getByText(`by ${ADMIN_EMAIL}`, { exact: true }).waitFor();
        await status.getByText(/^\w{3} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2}/).waitFor();
        await status.getByText('Comment: Valve checked, <b>fine</b>', { exact: true }).waitFor();
        await screenshot(page, `${store.name}-alerts-acknowledged-comment`);
        // The thing's name is a link to its page.
        const thing = acknowledged.getByRole('link', { name: 'Kiln', exact: true });
        assert.equal(await thing.getAttribute('href'), `/console/things/${thingKey}`);
        await thing.click();
        await page.getByRole('heading', { level: 1, name: 'Kiln', exact: true }).waitFor();
        // The thing's own alerts say the same.
        const own = page
          .getByRole('region', { name: 'Alerts', exact: true })
          .getByRole('row')
          .filter({ hasText: message });
        await own.getByText('Comment: Valve checked, <b>fine</b>', { exact: true }).waitFor();
      });

      it('when an alert is raised while the list is being read then it is listed and counted once the read lands', async (t) => {
        const page = await open(`${api.url}/console/alerts`);
        await page.getByText(/^Page 1 of 2 · \d+ alerts$/).waitFor();
        // The page reads its list on opening and again a second after its subscription is accepted; the
        // test begins once both are made, so that no read but the held one can show the new alert.
        let reads = 0;
        page.on('request', (request) => {
          if (new URL(request.url()).pathname === '/api/v3/alerts') reads++;
        });
        await page.reload();
        await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
        await until(
          async () => reads,
          (n) => n >= 2,
          'the read after the subscription was accepted',
          10_000,
        );
        const openBefore = (await api.request('GET', '/api/v3/alerts', { token, query: { status: 'open' } })).body
          .total_count as number;
        // The read that choosing Open asks for is answered by the server at once, and reaches the page
        // only once the new alert has been told live: the answer does not hold it.
        const read = await holdNextRead(t, page, (url) => url.pathname === '/api/v3/alerts');
        await page.getByLabel('Status', { exact: true }).selectOption('Open');
        await read.answered;
        const sent = await api.request('POST', `/api/v3/things/${thingKey}/events`, {
          token,
          body: { events: [{ timestamp: Date.now(), data: { temperature: 555 } }] },
        });
        assert.equal(sent.status, 200, sent.text);
        await row(page, 'Too hot 555').waitFor(WAIT);
        read.release();
        await page.getByText(new RegExp(`^Page 1 of \\d+ · ${openBefore + 1} alerts$`)).waitFor(WAIT);
        await row(page, 'Too hot 555').waitFor(WAIT);
      });
    });

    it('when /console/ is asked for with HEAD then it answers as GET, without a body', async () => {
      const got = await fetch(`${api.url}/console/`);
      const head = await fetch(`${api.url}/console/`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-type'), got.headers.get('content-type'));
      assert.equal(head.headers.get('cache-control'), got.headers.get('cache-control'));
      assert.equal(head.headers.get('content-security-policy'), got.headers.get('content-security-policy'));
      assert.equal(await head.text(), '');
      assert.match(await got.text(), /<div id="app">/);
    });

    it('when the tests are done then the pages broke no Content-Security-Policy and threw no error', () => {
      assert.deepEqual(watched.flat(), []);
    });
  });
}
