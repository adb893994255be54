/**
 * The console's overview in a real browser against a real server (docs/console.md, "Pages"): the
 * figures are the API's numbers and follow a device's events, status and alerts live; a role that may
 * read things but not alerts, and one that may not read things, see the API's refusal where it applies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, screenshot, signedInTab, watchProblems } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { inkAtRightEdge } from './chart-canvas.ts';
import { until } from './until.ts';

const FIGURES = ['Things', 'Online', 'Offline', 'Open alerts', 'Events in the last hour'] as const;

for (const store of STORES) {
  describe(`the console's overview in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let token: string;
    const problems: string[][] = [];

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    const signedIn = (path: string, email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<Page> =>
      signedInTab(browser, `${api.url}${path}`, { email, password }, problems);

    const figure = (page: Page, name: string) => page.getByRole('figure', { name, exact: true });

    /** What the API answers for each figure. */
    async function expected(): Promise<Record<(typeof FIGURES)[number], string>> {
      const summary = (await api.request('GET', '/api/v3/fleet_summary', { token })).body.fleet_summary;
      const open = (await api.request('GET', '/api/v3/alerts', { token, query: { status: 'open', per: 1 } })).body;
      return {
        Things: String(summary.things),
        Online: String(summary.online),
        Offline: String(summary.offline),
        'Open alerts': String(open.total_count),
        'Events in the last hour': String(summary.events_last_hour),
      };
    }

    /** Waits until every figure shows what the API answers, and answers it. */
    async function figuresMatchApi(page: Page) {
      const want = await expected();
      for (const name of FIGURES) {
        await figure(page, name)
          .filter({ hasText: new RegExp(`^${want[name]}$`) })
          .waitFor();
      }
      return want;
    }

    it('when signed in at /console/ then the overview shows the figures the API answers, its chart and open alerts', async () => {
      const device = new Device(api.url, await createKeyPair(api, token));
      const heard = unique('press');
      assert.equal((await device.register({ thing_key: heard, name: 'Press 1' })).status, 200);
      await createThing(api, token, { name: 'Press 2' });
      const rule = await api.request('POST', '/api/v3/rules', {
        token,
        body: {
          rule: {
            name: 'Overheating',
            condition: 'temperature > 90',
            alert_type: 2,
            alert_message: 'Press <b>hot</b>: {{temperature}}',
            trigger: 'every_event',
          },
        },
      });
      assert.equal(rule.status, 200, rule.text);
      assert.equal((await device.event({ thing_key: heard, data: { temperature: 95 } })).status, 200);
      assert.equal((await device.event({ thing_key: heard, data: { temperature: 20 } })).status, 200);

      const page = await signedIn('/console/');
      await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
      const shown = await figuresMatchApi(page);
      assert.deepEqual(
        [shown.Things, shown.Online, shown.Offline, shown['Events in the last hour'], shown['Open alerts']],
        ['2', '1', '1', '2', '1'],
      );
      const events = page.getByRole('img', { name: /^Events received per minute, the last hour: 2 in all$/ });
      await events.waitFor();
      await page.locator('.chart canvas').first().waitFor();
      // Counts are marked in whole numbers: no 0.5 event a minute.
      const marks = await until(
        async () =>
          (
            JSON.parse((await events.locator('.chart').getAttribute('data-scales')) ?? '[]') as { marks?: string[] }[]
          )[0]?.marks ?? [],
        (drawn) => drawn.length >= 2,
        'the events axis laid out',
      );
      assert.ok(
        marks.every((mark) => /^\d+$/.test(mark)),
        `the events axis is marked ${marks.join(', ')}`,
      );
      // The alert's message is text, never HTML.
      await page.getByRole('cell', { name: 'Press <b>hot</b>: 95', exact: true }).waitFor();
      assert.equal(page.url(), `${api.url}/console/`);
      assert.equal(await page.title(), 'Overview · Thingbase');
      await screenshot(page, `overview-${store.name}`);
      await assertAccessible(page, 'the overview');
      await page.close();
    });

    it("when the hour's last minute stands on a labelled tick then the chart's last time label is drawn whole, inside the canvas", async () => {
      // The minutes are the API's, moved to end at midnight (UTC): the last tick, at the chart's right
      // edge, is the widest label of the axis, `12:00 AM` over the new day's date.
      const end = Date.UTC(2026, 11, 1) / 1000;
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: 'UTC' });
      const page = await context.newPage();
      problems.push(watchProblems(page));
      await page.route('**/api/v3/fleet_summary', async (route) => {
        const answered = await (await route.fetch()).json();
        const minutes = answered.fleet_summary.events_per_minute as { minute: number; events: number }[];
        answered.fleet_summary.events_per_minute = minutes.map((m, i) => ({
          ...m,
          minute: end - (minutes.length - 1 - i) * 60,
        }));
        await route.fulfill({ json: answered });
      });
      try {
        await page.goto(`${api.url}/console/`);
        await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
        await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
        const canvas = page.locator('.chart canvas').first();
        await canvas.waitFor();
        const ink = await inkAtRightEdge(canvas);
        await screenshot(page, `overview-midnight-${store.name}`);
        assert.deepEqual(ink, { labels: true, edge: 0 }, 'time labels drawn, none reaching the canvas edge');
      } finally {
        // The overview refreshes its figures on its own: a refresh caught by the route as the context
        // closes must not outlive the test.
        await page.unrouteAll({ behavior: 'ignoreErrors' });
        await context.close();
      }
    });

    it('when a device sends then the figures change without a reload, to what the API answers', async () => {
      const page = await signedIn('/console/overview');
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      const before = await figuresMatchApi(page);
      const device = new Device(api.url, await createKeyPair(api, token));
      const fresh = unique('lathe');
      // A new thing (Things, Offline), then its events (Online, events) and an alert (Open alerts).
      assert.equal((await device.register({ thing_key: fresh, name: 'Lathe' })).status, 200);
      await figure(page, 'Things')
        .filter({ hasText: new RegExp(`^${Number(before.Things) + 1}$`) })
        .waitFor();
      assert.equal((await device.event({ thing_key: fresh, data: { temperature: 99 } })).status, 200);
      assert.equal((await device.event({ thing_key: fresh, data: { temperature: 98 } })).status, 200);
      await figure(page, 'Events in the last hour')
        .filter({ hasText: new RegExp(`^${Number(before['Events in the last hour']) + 2}$`) })
        .waitFor();
      await figure(page, 'Online')
        .filter({ hasText: new RegExp(`^${Number(before.Online) + 1}$`) })
        .waitFor();
      await figure(page, 'Open alerts')
        .filter({ hasText: new RegExp(`^${Number(before['Open alerts']) + 2}$`) })
        .waitFor();
      await figuresMatchApi(page);
      await screenshot(page, `overview-live-${store.name}`);
      await page.close();
    });

    it('when the role may read things but not alerts then the figures show and the alerts say plainly that the role may not read them', async () => {
      const user = await userWithAbilities(api, token, [11]);
      const page = await signedIn('/console/', user.email, user.password);
      await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
      const summary = (await api.request('GET', '/api/v3/fleet_summary', { token })).body.fleet_summary;
      await figure(page, 'Things')
        .filter({ hasText: new RegExp(`^${summary.things}$`) })
        .waitFor();
      await page
        .getByRole('region', { name: 'Open alerts', exact: true })
        .getByText('Your role may not read alerts.', { exact: true })
        .waitFor();
      await figure(page, 'Open alerts').filter({ hasText: /^–$/ }).waitFor();
      assert.equal(await page.getByRole('alert').count(), 0, 'nothing is said as a failure');
      const links = await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents();
      assert.ok(links.includes('Things') && !links.includes('Alerts') && !links.includes('Users'), links.join(', '));
      await page.close();
    });

    it('when the role may not read things then the overview reached by URL shows the API refusal', async () => {
      const user = await userWithAbilities(api, token, [21]);
      const page = await signedIn('/console/overview', user.email, user.password);
      const refused = await api.request('GET', '/api/v3/fleet_summary', { token: user.token });
      assert.equal(refused.status, 403);
      await page.getByRole('alert').filter({ hasText: refused.body.message }).waitFor();
      assert.equal(await figure(page, 'Things').count(), 0);
      const navigation = page.getByRole('navigation', { name: 'Main' });
      await navigation.getByRole('link', { name: 'Templates', exact: true }).waitFor();
      assert.equal(await navigation.getByRole('link', { name: 'Overview', exact: true }).count(), 0);
      await screenshot(page, `overview-refused-${store.name}`);
      await assertAccessible(page, 'the overview refused');
      await page.close();
    });

    it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
      assert.deepEqual(problems.flat(), []);
    });
  });
}
