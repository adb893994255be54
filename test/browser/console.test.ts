/**
 * The console's journeys in a real browser against a real server (docs/console.md, "Tests"): sign-in,
 * the things table and its live updates, sign-out, and what keeps the token safe.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserSkip, launchBrowser, routeRealtime, screenshot, watchProblems } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const SECTIONS = ['Overview', 'Things', 'Alerts', 'Rules', 'Key pairs', 'API keys', 'Users', 'Roles', 'Audit trail'];

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
      // Deliveries to a closed loopback port fail at once: the rules page shows the failed attempt.
      [api, browser] = await Promise.all([
        // An MQTT port of its own: the new key pair's settings name it.
        startServer(store, {
          env: async () => ({ ALLOW_PRIVATE_WEBHOOKS: 'true', MQTT_PORT: String(await freePort()) }),
        }),
        launchBrowser(),
      ]);
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
      // The form stands in the middle of the page's width.
      const form = await page.locator('main form').boundingBox();
      const width = (await page.evaluate('innerWidth')) as number;
      assert.ok(
        form && Math.abs(form.x + form.width / 2 - width / 2) < 16,
        `centred: ${JSON.stringify(form)} in ${width}`,
      );
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
      // Signing in at /console/ shows the overview; the things table is a link away.
      await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
      await navigation.getByRole('link', { name: 'Things', exact: true }).click();
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

    it("when a thing's page is opened then it shows its name, latest values and a chart that grows with live events", async () => {
      const token = await api.adminToken();
      const device = new Device(api.url, await createKeyPair(api, token));
      const thingKey = unique('boiler');
      assert.equal(
        (await device.register({ thing_key: thingKey, name: 'Boiler west', bi_directional: true })).status,
        200,
      );
      const now = Date.now();
      const history = Array.from({ length: 30 }, (_, i) => ({
        thing_key: thingKey,
        timestamp: now - (30 - i) * 60_000,
        data: { temperature: 20 + i / 10, pressure: 1 + i },
      }));
      assert.equal((await device.event({ events: history })).status, 200);
      await page.getByRole('searchbox', { name: 'Search things', exact: true }).fill(thingKey);
      await page.getByRole('link', { name: 'Boiler west', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Boiler west', exact: true }).waitFor();
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText(/^30 points · (temperature, pressure|pressure, temperature)$/).waitFor();
      // The chart library is loaded when first drawn: its canvas may follow the caption.
      await chart.locator('canvas').first().waitFor();
      assert.equal(await chart.locator('canvas').count(), 1, 'uPlot draws on a canvas');
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      assert.equal(
        (await device.event({ thing_key: thingKey, data: { temperature: 41.7, pressure: 31 } })).status,
        200,
      );
      await chart.getByText(/^31 points/).waitFor();
      // The latest value as the API gives it: 41.7, not rounded.
      const latest = page.getByRole('region', { name: 'Latest values' });
      await latest.getByText('41.7', { exact: true }).waitFor();
      await shot('thing-live');
      await chart.getByLabel('Range', { exact: true }).selectOption('Last 24 hours');
      await chart.getByText(/^\d+ averages of 5 min · pressure, temperature$/).waitFor();
      await shot('thing-24-hours');
    });

    it('when a silent thing sends a burst of events with a metric new to its chart then every one of them is drawn', async () => {
      const token = await api.adminToken();
      const device = new Device(api.url, await createKeyPair(api, token));
      const thingKey = unique('quiet');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Quiet pump' })).status, 200);
      const current = new URL(page.url());
      await page.goto(`${current.origin}/console/things/${thingKey}`);
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('No numeric values in this range.').waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      const events = Array.from({ length: 20 }, (_, i) => ({ thing_key: thingKey, data: { flow: i } }));
      assert.equal((await device.event({ events })).status, 200);
      await chart.getByText(/^20 points · flow$/).waitFor();
      await page.goBack();
    });

    it('when Send instruction is used on a bi-directional thing then the instruction is listed as pending', async () => {
      await page.getByRole('button', { name: 'Send instruction', exact: true }).click();
      await page.getByLabel('Instruction name', { exact: true }).fill('Open valve');
      await page.getByLabel('Definition', { exact: true }).fill('{"valve": "open"}');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await page.getByRole('row').filter({ hasText: 'Open valve' }).filter({ hasText: 'pending' }).waitFor();
    });

    it('when a rule is made with New rule then the condition is checked as typed, and its alert arrives live on Alerts', async () => {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rules', exact: true }).click();
      await page.getByRole('button', { name: 'New rule', exact: true }).click();
      await page.getByLabel('Name', { exact: true }).fill('Too hot');
      const condition = page.getByLabel('Condition', { exact: true });
      await condition.fill('temperature >');
      const refused = await api.request('POST', '/api/v3/expressions/validate', {
        token: await api.adminToken(),
        body: { expression: 'temperature >', kind: 'rule' },
      });
      assert.equal(refused.status, 400);
      // The API's words about the condition, as a sentence under it.
      const words = refused.body.errors[0].message as string;
      await page
        .getByRole('alert')
        .filter({ hasText: `${words.charAt(0).toUpperCase()}${words.slice(1)}` })
        .waitFor();
      await shot('rule-condition-refused');
      await condition.fill('temperature > 100');
      await page.getByText('The condition is valid.').waitFor();
      await page.getByLabel('Alert message', { exact: true }).fill('Boiler too hot');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      const row = page.getByRole('row').filter({ hasText: 'Too hot' });
      await row.getByText('temperature > 100').waitFor();

      const token = await api.adminToken();
      const rules = await api.request('GET', '/api/v3/rules', { token, query: { search: 'Too hot' } });
      const ruleKey = rules.body.rules[0].rule_key as string;
      const action = await api.request('POST', '/api/v3/notification_actions', {
        token,
        body: {
          notification_action: {
            type: 'CallHttpUrlAction',
            rule_key: ruleKey,
            method: 'POST',
            url: 'http://127.0.0.1:9/hook',
          },
        },
      });
      assert.equal(action.status, 200, action.text);

      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Alerts', exact: true }).click();
      await page.getByLabel('Status', { exact: true }).selectOption('All');
      await page.getByRole('heading', { name: 'Alerts', exact: true }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      await page.waitForTimeout(300);
      const device = new Device(api.url, await createKeyPair(api, token));
      const thingKey = unique('kiln');
      await device.register({ thing_key: thingKey, name: 'Kiln' });
      assert.equal((await device.event({ thing_key: thingKey, data: { temperature: 120.5 } })).status, 200);
      await page.getByRole('row').filter({ hasText: 'Kiln' }).filter({ hasText: 'Boiler too hot' }).waitFor();
      await shot('alerts-live');

      // Delivery attempts are read when the rule's notifications are opened: wait for the first one.
      const actionKey = action.body.notification_action.notification_action_key as string;
      for (let tries = 0; tries < 100; tries++) {
        const attempts = await api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
        if (attempts.body.total_count > 0) break;
        await new Promise((done) => setTimeout(done, 100));
      }
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rules', exact: true }).click();
      await page.getByRole('button', { name: 'Notifications of Too hot', exact: true }).click();
      const deliveries = page.getByRole('region', { name: /^Deliveries of HTTP call/ });
      await deliveries.getByRole('row').filter({ hasText: 'failed' }).first().waitFor({ timeout: 15_000 });
      await shot('rule-deliveries');
    });

    it('when an alert is acknowledged and then cleared from Alerts then its status follows, and the Status filter lists by status', async () => {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Alerts', exact: true }).click();
      const row = page.getByRole('row').filter({ hasText: 'Kiln' }).filter({ hasText: 'Boiler too hot' });
      await row.getByRole('cell', { name: 'open', exact: true }).waitFor();
      await page.getByLabel('Comment', { exact: true }).fill('on it');
      await row.getByRole('button', { name: 'Acknowledge', exact: true }).click();
      await row.getByRole('cell', { name: /^acknowledged( |$)/ }).waitFor();
      const token = await api.adminToken();
      const stored = await api.request('GET', '/api/v3/alerts', { token, query: { search: 'Boiler too hot' } });
      assert.equal(stored.body.alerts[0].status, 'acknowledged');
      assert.equal(stored.body.alerts[0].comment, 'on it');
      await page.getByLabel('Status', { exact: true }).selectOption('Open');
      await row.waitFor({ state: 'detached' });
      await page.getByLabel('Status', { exact: true }).selectOption('Acknowledged');
      await row.waitFor();
      await row.getByRole('button', { name: 'Clear', exact: true }).click();
      // Cleared, it leaves the list of acknowledged alerts.
      await row.waitFor({ state: 'detached' });
      await page.getByLabel('Status', { exact: true }).selectOption('Cleared');
      await row.getByRole('cell', { name: /^cleared( |$)/ }).waitFor();
      assert.equal(await row.getByRole('button').count(), 0, 'a cleared alert has nothing left to do');
      await page.getByLabel('Status', { exact: true }).selectOption('All');
      await shot('alerts-cleared');
    });

    it('when a key pair is created then its secret and device settings are shown once, and gone after navigating away', async () => {
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Key pairs', exact: true })
        .click();
      await page.getByRole('button', { name: 'New key pair', exact: true }).click();
      await page.getByLabel('Name', { exact: true }).fill('Line 3 gateway');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const secretFigure = page.getByRole('figure', { name: 'Secret key', exact: true });
      const secret = ((await secretFigure.locator('pre').textContent()) ?? '').trim();
      assert.match(secret, /^[0-9a-z]{40}$/);
      // The MQTT password (an HMAC) is computed in the page after the secret is shown.
      const mqttSettings = page
        .getByRole('figure', { name: /^Device settings for MQTT/ })
        .locator('pre')
        .filter({ hasText: /password = [0-9a-f]{64}/ });
      await mqttSettings.waitFor();
      const mqtt = (await mqttSettings.textContent()) ?? '';
      const pairs = await api.request('GET', '/api/v3/key_pairs', {
        token: await api.adminToken(),
        query: { search: 'Line 3' },
      });
      const accessKey = pairs.body.key_pairs[0].access_key as string;
      const { createHmac } = await import('node:crypto');
      assert.match(mqtt, new RegExp(`username = ${accessKey}`));
      assert.match(mqtt, /^protocol = mqtt$/m);
      assert.match(mqtt, new RegExp(`^port = ${api.server.mqttPort}$`, 'm'));
      assert.match(mqtt, new RegExp(`password = ${createHmac('sha256', secret).update(accessKey).digest('hex')}`));
      assert.match(
        (await page
          .getByRole('figure', { name: 'Device settings for HTTP', exact: true })
          .locator('pre')
          .textContent()) ?? '',
        new RegExp(`secret_key = ${secret}`),
      );
      await shot('key-pair-secret');
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users', exact: true }).click();
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Key pairs', exact: true })
        .click();
      await page.getByRole('row').filter({ hasText: 'Line 3 gateway' }).waitFor();
      assert.equal(await page.getByText(secret).count(), 0, 'the secret is gone');
    });

    it('when Users, Roles and Audit trail are opened then the users, the roles and the latest changes are listed', async () => {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users', exact: true }).click();
      const users = page.getByRole('table', { name: 'Users' });
      await users.getByRole('row').filter({ hasText: ADMIN_EMAIL }).waitFor();
      await shot('users');
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Roles', exact: true }).click();
      await page.getByRole('table', { name: 'Roles' }).getByRole('row').nth(1).waitFor();
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Audit trail', exact: true })
        .click();
      await page.getByRole('row').filter({ hasText: 'Line 3 gateway' }).filter({ hasText: 'create' }).waitFor();
      await page.getByRole('row').filter({ hasText: 'Too hot' }).first().waitFor();
      await shot('audit-trail');
    });

    it('when the realtime connection drops then the header says so, and it connects again by itself', async (t) => {
      const { sockets } = await routeRealtime(t, page);
      // A page with live updates opens the connection, through the route.
      await page.reload();
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Things', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      assert.equal(sockets.length, 1);
      await sockets[0]?.close({ code: 1012, reason: 'restarting' });
      await page.getByRole('status').filter({ hasText: 'Connection lost: reconnecting' }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      assert.equal(sockets.length, 2, 'a new connection');
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

    it('when the OEM admin signs in with an Organisation key then the console acts in that child organisation', async () => {
      const token = await api.adminToken();
      const child = await api.request('POST', '/api/v3/organisations', {
        token,
        body: { organisation: { name: unique('Plant') } },
      });
      assert.equal(child.status, 200, child.text);
      const { organisation_key: organisationKey, name } = child.body.organisation;
      await page.getByLabel('Organisation key', { exact: true }).fill(organisationKey);
      await signIn();
      await page.getByText(`${ADMIN_EMAIL} · ${name}`).waitFor();
      await shot('child-organisation');
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Things', exact: true }).click();
      await page.getByRole('heading', { name: 'No things yet', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByLabel('Organisation key', { exact: true }).fill('');
    });

    it("when a user's role may not read a page's data then the page shows the API's message", async () => {
      const user = await userWithAbilities(api, await api.adminToken(), [11]);
      const refused = await api.request('GET', '/api/v3/alerts', { token: user.token });
      assert.equal(refused.status, 403);
      // The navigation leaves out what the role may not read; the page is still reached by its URL.
      await page.goto(`${api.url}/console/alerts`);
      await signIn(user.email, user.password);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Things', exact: true }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Alerts', exact: true }).count(), 0);
      await page.getByRole('alert').filter({ hasText: refused.body.message }).waitFor();
      await shot('forbidden');
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    });

    it('when the journeys are done then no URL carried a token and the page broke no Content-Security-Policy', () => {
      assert.ok(urls.length > 5);
      for (const url of urls) assert.doesNotMatch(url, /token=/i, url);
      assert.deepEqual(problems, []);
    });
  });
}
