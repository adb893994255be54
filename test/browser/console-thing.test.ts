/**
 * A thing's page in a real browser against a real server (docs/console.md, "Using it"): its latest
 * values, the Telemetry chart's history and live events, its status, title and what a role that may
 * not read or send something sees; a thing that has sent nothing leads to Connect a device, whose
 * commands are then for that thing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, beforeEach, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import {
  browserSkip,
  holdSubscriptions,
  launchBrowser,
  routeRealtime,
  screenshot,
  watchProblems,
} from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { inkAtRightEdge } from './chart-canvas.ts';
import { until } from './until.ts';

const run = promisify(execFile);

for (const store of STORES) {
  describe(`a thing's page in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let problems: string[];
    let device: Device;
    /** Realtime frames the page received since it last opened a thing. */
    let frames: string[] = [];
    const shot = (name: string) => screenshot(page, `${store.name}-thing-${name}`);

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      device = new Device(api.url, await createKeyPair(api, await api.adminToken()));
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      problems = watchProblems(page);
      page.on('websocket', (socket) => socket.on('framereceived', (frame) => frames.push(String(frame.payload))));
      await page.goto(`${api.url}/console/`);
      await signIn(page);
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });
    beforeEach(() => {
      frames = [];
    });

    async function signIn(on: Page, email = ADMIN_EMAIL, password = ADMIN_PASSWORD) {
      await on.getByLabel('Email', { exact: true }).fill(email);
      await on.getByLabel('Password', { exact: true }).fill(password);
      await on.getByRole('button', { name: 'Sign in', exact: true }).click();
    }

    /**
     * Opens a thing's page and waits until its realtime subscriptions are answered (events twice,
     * things and alerts), so that what a device sends next arrives live.
     */
    async function openThing(thingKey: string, name: string) {
      frames = [];
      await page.goto(`${api.url}/console/things/${thingKey}`);
      await page.getByRole('heading', { level: 1, name, exact: true }).waitFor();
      await page.getByRole('region', { name: 'Telemetry', exact: true }).locator('.chart-caption').waitFor();
      await until(
        async () => frames.filter((f) => f.includes('"type":"subscribed"')).length,
        (n) => n >= 4,
        'realtime subscriptions answered',
      );
    }

    async function send(payload: object) {
      const sent = await device.event(payload);
      assert.equal(sent.status, 200, sent.text);
    }

    /** The value the chart's legend gives for its first metric with the cursor at the plot's left or right end. */
    async function legendAt(end: 'left' | 'right', expected: string) {
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      const value = chart.locator('.u-legend .u-series').nth(1).locator('.u-value');
      // The cursor is put there again each time: a read of the range again (its subscription accepted
      // after it) draws a new chart.
      await until(
        async () => {
          const box = await chart.locator('.u-over').boundingBox();
          if (!box) return '';
          await page.mouse.move(end === 'left' ? box.x + 1 : box.x + box.width - 1, box.y + box.height / 2);
          return (await value.textContent()) ?? '';
        },
        (text) => text === expected,
        `the legend at the ${end} end`,
      );
      await page.mouse.move(0, 0);
    }

    /** Sends a thing `count` events a minute apart, the last a minute ago, the `i`th with `data(i)`. */
    async function sendMinutely(thingKey: string, count: number, data: (i: number) => object) {
      const now = Date.now();
      const events = Array.from({ length: count }, (_, i) => ({
        thing_key: thingKey,
        timestamp: now - (count - i) * 60_000,
        data: data(i),
      }));
      await send({ events });
    }

    /** A thing named `name` of a new template `template` (made unique) declaring `metrics`. */
    async function thingOfTemplate(name: string, template: string, metrics: object[]) {
      const token = await api.adminToken();
      const made = await api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: unique(template), metrics } },
      });
      assert.equal(made.status, 200, made.text);
      return createThing(api, token, { name, thing_template_key: made.body.thing_template.thing_template_key });
    }

    /**
     * The chart's y scales as it says it drew them: each one's metrics, axis and the values it spans. Waited
     * for: uPlot draws a frame after the caption above the chart is shown.
     */
    async function scalesOf(chart: ReturnType<Page['getByRole']>) {
      const described = await until(
        () => chart.locator('.chart').getAttribute('data-scales'),
        (text) => text !== null && text !== '[]',
        "the chart's drawn scales",
      );
      return JSON.parse(described ?? '[]') as { metrics: string[]; axis: string; min: number; max: number }[];
    }

    /** The value the chart's legend gives for its first metric with the cursor away from the plot. */
    async function legendAway(expected: string) {
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await page.mouse.move(0, 0);
      const value = chart.locator('.u-legend .u-series').nth(1).locator('.u-value');
      await until(
        async () => (await value.textContent()) ?? '',
        (text) => text === expected,
        'the legend away from the cursor',
      );
    }

    it('when a thing is opened then the tab title is its name', async () => {
      const thingKey = unique('title');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Pump with a title' })).status, 200);
      await openThing(thingKey, 'Pump with a title');
      await until(
        () => page.title(),
        (title) => title === 'Pump with a title · Thingbase',
        'the title',
      );
      await page.getByRole('link', { name: 'Things', exact: true }).click();
      await until(
        () => page.title(),
        (title) => title === 'Things · Thingbase',
        'the title on Things',
      );
    });

    it('when a thing has sent no event yet then Latest values leads to Connect a device, naming its key, and its first event replaces that and brings Export and Delete events', async () => {
      const token = await api.adminToken();
      const thing = await createThing(api, token, { name: 'Silent boiler', thing_key: unique('silent') });
      await openThing(thing.thing_key, 'Silent boiler');
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      await latest.getByText(/^No event yet\./).waitFor();
      await latest.getByText(thing.thing_key, { exact: true }).waitFor();
      const connect = latest.getByRole('link', { name: 'Connect a device', exact: true });
      assert.equal(await connect.getAttribute('href'), `/console/connect?thing=${thing.thing_key}`);
      // Nothing to export or delete yet; the thing itself may be edited or deleted.
      const offered = (name: string) => page.getByRole('button', { name, exact: true }).count();
      assert.deepEqual(
        [await offered('Edit'), await offered('Delete'), await offered('Export'), await offered('Delete events')],
        [1, 1, 0, 0],
      );
      await shot('no-event-yet');
      await send({ thing_key: thing.thing_key, data: { temperature: 19.5 } });
      await latest.getByText('19.5', { exact: true }).waitFor();
      assert.equal(await latest.getByRole('link', { name: 'Connect a device', exact: true }).count(), 0);
      await page.getByRole('button', { name: 'Export', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Delete events', exact: true }).waitFor();
    });

    it("when Connect a device is followed from a thing that has sent no event then its commands are for that thing's key", async () => {
      const token = await api.adminToken();
      const thing = await createThing(api, token, { name: 'Unconnected boiler', thing_key: unique('unconnected') });
      await openThing(thing.thing_key, 'Unconnected boiler');
      await page
        .getByRole('region', { name: 'Latest values', exact: true })
        .getByRole('link', { name: 'Connect a device', exact: true })
        .click();
      await page.getByRole('heading', { level: 1, name: 'Connect a device', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Create key pair', exact: true }).click();
      assert.equal(await page.getByLabel('Thing key', { exact: true }).inputValue(), thing.thing_key);
      const curl = (await page.getByRole('figure', { name: 'With curl (HTTP)' }).locator('pre').textContent()) ?? '';
      assert.ok(curl.includes(`{"thing_key":"${thing.thing_key}"`), `the curl commands name the thing: ${curl}`);
      const status = page.getByRole('status').filter({ hasText: thing.thing_key });
      await status.filter({ hasText: `Waiting for the first event from ${thing.thing_key}` }).waitFor();
      await shot('connect-from-thing');
      // Run as shown, the commands send the thing its first event, and their register keeps its name.
      await run('/bin/sh', ['-c', curl]);
      await status.filter({ hasText: `First event received from ${thing.thing_key}` }).waitFor();
      await page.getByRole('link', { name: `Open ${thing.thing_key}`, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Unconnected boiler', exact: true }).waitFor();
    });

    it('when the last event lacks a metric then Latest values still shows its newest value from an earlier event', async () => {
      const thingKey = unique('boiler');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Boiler partial' })).status, 200);
      const now = Date.now();
      await send({ thing_key: thingKey, timestamp: now - 60_000, data: { temperature: 41.7, pressure: 2.5 } });
      await send({ thing_key: thingKey, timestamp: now - 30_000, data: { temperature: 42.1 } });
      await openThing(thingKey, 'Boiler partial');
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      await latest.getByText('42.1', { exact: true }).waitFor();
      await latest.getByText('2.5', { exact: true }).waitFor();
      assert.deepEqual(await latest.getByRole('term').allTextContents(), ['pressure', 'temperature']);
      await shot('latest-values');
    });

    it("when events are sent before the page's subscription is accepted then Latest values shows each metric's newest value", async (t) => {
      const thingKey = unique('boiler');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Boiler late' })).status, 200);
      const now = Date.now();
      await send({ thing_key: thingKey, timestamp: now - 60_000, data: { temperature: 40.5 } });
      // The page's events subscriptions (Latest values' and the chart's) reach the server only once the
      // test lets them.
      const held = await holdSubscriptions(t, page, (subscription) => subscription.topic === 'events');
      await page.goto(`${api.url}/console/things/${thingKey}`);
      await page.getByRole('heading', { level: 1, name: 'Boiler late', exact: true }).waitFor();
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      await latest.getByText('40.5', { exact: true }).waitFor();
      await until(
        async () => held.count,
        (n) => n >= 2,
        'Latest values and the chart subscribe',
        15_000,
      );
      // The last event lacks pressure: only the hour's events have it.
      await send({ thing_key: thingKey, timestamp: now - 20_000, data: { pressure: 2.75 } });
      await send({ thing_key: thingKey, timestamp: now - 10_000, data: { temperature: 43.25 } });
      held.release();
      await latest.getByText('2.75', { exact: true }).waitFor();
      await latest.getByText('43.25', { exact: true }).waitFor();
    });

    it("when the thing's template gives a metric a unit then Latest values shows it beside the value", async () => {
      const thing = await thingOfTemplate('Kiln with units', 'Kilns', [
        { name: 'temperature', data_type: 'number', unit: '°C' },
        { name: 'door', data_type: 'string' },
      ]);
      await send({ thing_key: thing.thing_key, data: { temperature: 812.5, door: 'shut' } });
      await openThing(thing.thing_key, 'Kiln with units');
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      // The value is shown once the thing is read, its unit once its template is.
      await latest.getByRole('definition').filter({ hasText: '812.5 °C' }).waitFor();
      assert.deepEqual(await latest.getByRole('definition').allTextContents(), ['shut', '812.5 °C']);
    });

    it('when a late event arrives live then Latest values keeps the newer value', async () => {
      const thingKey = unique('late');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Boiler late' })).status, 200);
      const now = Date.now();
      await send({ thing_key: thingKey, timestamp: now - 30_000, data: { temperature: 42.1 } });
      await page.goto(`${api.url}/console/things/${thingKey}`);
      await page.getByRole('heading', { level: 1, name: 'Boiler late', exact: true }).waitFor();
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      await latest.getByText('42.1', { exact: true }).waitFor();
      // Two hours late, then a new metric: once the second shows, the first has been handled.
      await send({ thing_key: thingKey, timestamp: now - 2 * 3600_000, data: { temperature: 10.5 } });
      await send({ thing_key: thingKey, data: { flow: 7 } });
      await latest.getByText('7', { exact: true }).waitFor();
      await latest.getByText('42.1', { exact: true }).waitFor();
      assert.equal(await latest.getByText('10.5', { exact: true }).count(), 0);
    });

    it('when the last hour holds 15000 events then the chart draws their averages per minute, and live events join them', async () => {
      const thingKey = unique('fast');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Fast sensor' })).status, 200);
      const now = Date.now();
      // Five events a second from 55 to 5 minutes ago: more than the chart draws one by one.
      for (let batch = 0; batch < 3; batch++) {
        const events = Array.from({ length: 5000 }, (_, i) => ({
          thing_key: thingKey,
          timestamp: now - 3300_000 + (batch * 5000 + i) * 200,
          data: { flow: 1234.5 },
        }));
        await send({ events });
      }
      await openThing(thingKey, 'Fast sensor');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText(/^\d+ averages of 1 min · flow$/).waitFor();
      const buckets = Number((await chart.locator('.chart-caption').textContent())?.split(' ')[0]);
      // Every minute of the hour, empty ones too, not an event each.
      assert.ok(buckets >= 60 && buckets <= 62, `buckets: ${buckets}`);
      // Live events go into the average of their minute, the newest on the chart.
      const at = Date.now();
      await send({ thing_key: thingKey, timestamp: at, data: { flow: 2000 } });
      await send({ thing_key: thingKey, timestamp: at, data: { flow: 1000 } });
      await legendAt('right', '1500');
      await shot('15000-events-averaged');
    });

    it('when events arrive live out of order then those older than the range are left out and the others are put in time order', async () => {
      const thingKey = unique('order');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Flow meter' })).status, 200);
      const now = Date.now();
      await sendMinutely(thingKey, 10, (i) => ({ flow: i }));
      await openThing(thingKey, 'Flow meter');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('10 points · flow', { exact: true }).waitFor();
      await send({ thing_key: thingKey, timestamp: now - 3 * 3600_000, data: { flow: 500 } });
      await send({ thing_key: thingKey, timestamp: now - 30 * 60_000, data: { flow: 777 } });
      await send({ thing_key: thingKey, data: { flow: 9.5 } });
      await chart.getByText('12 points · flow', { exact: true }).waitFor();
      await legendAt('left', '777');
      await legendAt('right', '9.5');
      // Away from the cursor, the legend shows the latest point, not blanks.
      await legendAway('9.5');
      await shot('out-of-order');
    });

    it("when an event taken live during the chart's read has the second of the read's last event then the chart draws both", async (t) => {
      const thingKey = unique('same');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Same second' })).status, 200);
      const second = Math.floor(Date.now() / 1000) - 60;
      await send({ thing_key: thingKey, timestamp: second * 1000, data: { flow: 1 } });
      await openThing(thingKey, 'Same second');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('1 point · flow', { exact: true }).waitFor();
      // The new range's read of events is answered only once another event of that second is stored
      // after it and has come live (the chart's subscription is kept across ranges).
      const reads = /\/api\/v3\/query\/thing_data$/;
      await page.route(reads, async (route) => {
        if (route.request().postDataJSON().per === 1) return route.continue();
        const response = await route.fetch();
        await send({ thing_key: thingKey, timestamp: second * 1000, data: { flow: 2 } });
        await until(
          async () => frames.some((f) => f.includes('"flow":2')),
          (taken) => taken,
          'the second event taken live',
        );
        await route.fulfill({ response });
      });
      t.after(() => page.unroute(reads));
      await chart.getByLabel('Range', { exact: true }).selectOption('Last 15 minutes');
      await chart.getByText('2 points · flow', { exact: true }).waitFor();
    });

    it("when the chart's subscription is accepted while the range is read then an event stored before the acceptance is drawn", async (t) => {
      const thingKey = unique('between');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Between' })).status, 200);
      await sendMinutely(thingKey, 3, (i) => ({ level: i }));
      const held = await holdSubscriptions(t, page, (subscription) => subscription.topic === 'events');
      // The chart's first read of the range is answered from before an event that is then stored, and
      // only once the subscriptions, let through after that event, are accepted.
      const reads = /\/api\/v3\/query\/thing_data$/;
      let first = true;
      let answered: Promise<void> | undefined;
      await page.route(reads, async (route) => {
        const asked = route.request().postDataJSON();
        if (asked.per === 1 || asked.order !== 'asc' || !first) return route.continue();
        first = false;
        let done = () => {};
        answered = new Promise((resolve) => {
          done = resolve;
        });
        const response = await route.fetch();
        await send({ thing_key: thingKey, data: { level: 9 } });
        held.release();
        await until(
          async () => frames.filter((f) => f.includes('"type":"subscribed"')).length,
          (n) => n >= 4,
          'the subscriptions accepted',
        );
        // Time for the page to take the acceptance in before the read's answer.
        await new Promise((resolve) => setTimeout(resolve, 300));
        await route.fulfill({ response });
        done();
      });
      t.after(() => page.unroute(reads));
      frames = [];
      await page.goto(`${api.url}/console/things/${thingKey}`);
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('4 points · level', { exact: true }).waitFor();
      await legendAway('9');
      assert.ok(answered, 'the read was held');
      await answered;
    });

    it('when another live range is chosen then the chart keeps its subscription and reads the range once', async () => {
      const thingKey = unique('steady');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Steady sensor' })).status, 200);
      await send({ thing_key: thingKey, timestamp: Date.now() - 60_000, data: { flow: 3 } });
      await openThing(thingKey, 'Steady sensor');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('1 point · flow', { exact: true }).waitFor();
      const accepted = () => frames.filter((f) => f.includes('"type":"subscribed"')).length;
      const before = accepted();
      const reads: string[] = [];
      const noteRead = (request: Request) => {
        if (!request.url().endsWith('/api/v3/query/thing_data')) return;
        const body = request.postDataJSON();
        // Reads of the 15 minutes (the hour's, asked for before, may still come).
        if (body.to - body.from === 900) reads.push(JSON.stringify(body));
      };
      page.on('request', noteRead);
      try {
        await chart.getByLabel('Range', { exact: true }).selectOption('Last 15 minutes');
        await chart.getByText('1 point · flow', { exact: true }).waitFor();
        // The caption reads the same before the range's answer: the reads are what tell it was asked for.
        await until(
          async () => reads.length,
          (count) => count >= 2,
          "the range's reads",
        );
        // Time for a subscription renewed to be accepted, and the read it would ask for.
        await new Promise((done) => setTimeout(done, 1500));
        assert.equal(accepted(), before, 'no subscription renewed');
        // The count of the range (a page of one), then its events.
        assert.equal(reads.length, 2, reads.join('\n'));
      } finally {
        page.off('request', noteRead);
      }
    });

    it('when the last 5 minutes are chosen then the chart asks for those 5 minutes, draws their events and follows live ones', async () => {
      const thingKey = unique('quick');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Quick sensor' })).status, 200);
      const now = Date.now();
      // Every few seconds for 20 minutes: the last 5 minutes hold 3 of the 5 events.
      const minutesAgo = [20, 10, 4, 2, 0.5];
      const events = minutesAgo.map((ago, i) => ({
        thing_key: thingKey,
        timestamp: now - ago * 60_000,
        data: { flow: 10 + i },
      }));
      await send({ events });
      await openThing(thingKey, 'Quick sensor');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('5 points · flow', { exact: true }).waitFor();
      const range = chart.getByLabel('Range', { exact: true });
      assert.equal(await range.inputValue(), 'Last hour', 'the last hour is shown first');
      assert.deepEqual((await range.locator('option').allTextContents()).slice(0, 3), [
        'Last 5 minutes',
        'Last 15 minutes',
        'Last hour',
      ]);
      const asked = page.waitForRequest((request) => request.url().endsWith('/api/v3/query/thing_data'));
      await range.selectOption('Last 5 minutes');
      const body = JSON.parse((await asked).postData() ?? '{}');
      assert.equal(body.to - body.from, 300, `the window asked for: ${JSON.stringify(body)}`);
      assert.ok(Math.abs(body.to - Date.now() / 1000) < 30, 'ending now');
      await chart.getByText('3 points · flow', { exact: true }).waitFor();
      await legendAt('left', '12');
      await legendAt('right', '14');
      // A device sending every few seconds is followed live in the short range too.
      await send({ thing_key: thingKey, data: { flow: 15.5 } });
      await chart.getByText('4 points · flow', { exact: true }).waitFor();
      await legendAt('right', '15.5');
      await shot('last-5-minutes');
    });

    it('when events are sent while the realtime connection is lost then the chart holds them once it is back', async (t) => {
      const thingKey = unique('gap');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Gap sensor' })).status, 200);
      await send({ thing_key: thingKey, timestamp: Date.now() - 120_000, data: { level: 1 } });
      const route = await routeRealtime(t, page);
      await openThing(thingKey, 'Gap sensor');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('1 point · level', { exact: true }).waitFor();
      await route.drop();
      await page.getByRole('status').filter({ hasText: 'Connection lost' }).waitFor();
      await send({ thing_key: thingKey, timestamp: Date.now() - 60_000, data: { level: 2 } });
      await send({ thing_key: thingKey, data: { level: 3 } });
      route.allow = true;
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor({ timeout: 30_000 });
      await chart.getByText('3 points · level', { exact: true }).waitFor();
      await legendAway('3');
    });

    it('when metrics have different units then each unit has a scale and an axis of its own, and a third is drawn without one', async () => {
      const thing = await thingOfTemplate('Autoclave', 'Autoclaves', [
        { name: 'temperature', data_type: 'number', unit: '°C' },
        { name: 'pressure', data_type: 'number', unit: 'hPa' },
        { name: 'door_open', data_type: 'number' },
      ]);
      await sendMinutely(thing.thing_key, 8, (i) => ({
        temperature: 20 + i * 10,
        pressure: 1000 + i * 2.25,
        door_open: i % 2,
      }));
      await openThing(thing.thing_key, 'Autoclave');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('8 points · temperature, pressure, door_open', { exact: true }).waitFor();
      // The template's order: temperature on the left axis, pressure on the right, door_open (0 or 1)
      // on a third scale, with no axis, which the note under the chart names.
      const scales = await scalesOf(chart);
      assert.deepEqual(
        scales.map((scale) => [scale.metrics, scale.axis]),
        [
          [['temperature'], 'left'],
          [['pressure'], 'right'],
          [['door_open'], 'none'],
        ],
      );
      const [temperature, pressure, door] = scales;
      assert.ok(temperature && pressure && door);
      // Each scale spans its own values, not the others': no line is flattened by another's.
      assert.ok(temperature.min <= 20 && temperature.max >= 90 && temperature.max < 200, JSON.stringify(temperature));
      assert.ok(pressure.min >= 900 && pressure.min <= 1000 && pressure.max >= 1015.75, JSON.stringify(pressure));
      assert.ok(door.min <= 0 && door.max >= 1 && door.max < 10, JSON.stringify(door));
      await chart
        .getByText('door_open is drawn to a scale of its own, with no axis: the legend gives its values.', {
          exact: true,
        })
        .waitFor();
      await shot('units');
    });

    it("when two units have as many metrics then the left axis is the unit of the template's first metric", async () => {
      // By name air (°C) comes first; in the template zeta (%) does, and the template's order decides.
      const thing = await thingOfTemplate('Dryer', 'Dryers', [
        { name: 'zeta', data_type: 'number', unit: '%' },
        { name: 'air', data_type: 'number', unit: '°C' },
        { name: 'beta', data_type: 'number', unit: '%' },
        { name: 'temp', data_type: 'number', unit: '°C' },
      ]);
      await sendMinutely(thing.thing_key, 4, (i) => ({ zeta: 10 + i, air: 60 + i, beta: 20 + i, temp: 70 + i }));
      await openThing(thing.thing_key, 'Dryer');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('4 points · zeta, air, beta, temp', { exact: true }).waitFor();
      const scales = await scalesOf(chart);
      assert.deepEqual(
        scales.map((scale) => [[...scale.metrics].sort(), scale.axis]),
        [
          [['beta', 'zeta'], 'left'],
          [['air', 'temp'], 'right'],
        ],
      );
    });

    it('when metrics without units have unlike values then the unlike one has an axis of its own and alike ones share one', async () => {
      const thingKey = unique('boiler');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Boiler without units' })).status, 200);
      await sendMinutely(thingKey, 6, (i) => ({
        temperature: 60 + i * 4,
        humidity: 30 + i * 6,
        pressure: (140 + i * 4) / 100,
      }));
      await openThing(thingKey, 'Boiler without units');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText(/^6 points · /).waitFor();
      const scales = await scalesOf(chart);
      assert.deepEqual(
        scales.map((scale) => [scale.metrics, scale.axis]),
        [
          [['humidity', 'temperature'], 'left'],
          [['pressure'], 'right'],
        ],
      );
      const pressure = scales[1];
      assert.ok(
        pressure && pressure.min >= 0 && pressure.max < 5,
        `pressure is not drawn flat: ${JSON.stringify(pressure)}`,
      );
      assert.equal(await chart.locator('.chart-note').count(), 0, 'no line without an axis');
      await shot('no-units');
      // On a phone the two axes leave the plot most of the chart's width, not a third of it.
      await page.setViewportSize({ width: 390, height: 900 });
      try {
        const plotShare = () =>
          chart.locator('.chart').evaluate((box) => {
            const plot = box.querySelector('.u-over')?.getBoundingClientRect().width ?? 0;
            return Math.round((plot / box.getBoundingClientRect().width) * 100);
          });
        await until(plotShare, (share) => share >= 55, "the plot's share of a phone's chart, in percent");
        await shot('no-units-phone');
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
      await assertAccessible(page, "a thing's page with two axes");
    });

    it('when a live event carries a nested metric then its value is drawn', async () => {
      const thingKey = unique('press');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Press' })).status, 200);
      await sendMinutely(thingKey, 5, (i) => ({ machine: { temp: 50 + i } }));
      await openThing(thingKey, 'Press');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('5 points · machine.temp', { exact: true }).waitFor();
      await send({ thing_key: thingKey, data: { machine: { temp: 99 } } });
      await chart.getByText('6 points · machine.temp', { exact: true }).waitFor();
      await legendAt('right', '99');
    });

    it('when a thing sends a metric its template does not declare then the chart leaves it out, live and after a reload', async () => {
      const thing = await thingOfTemplate('Declared boiler', 'Boilers', [{ name: 'temperature', data_type: 'number' }]);
      await sendMinutely(thing.thing_key, 5, (i) => ({ temperature: 60 + i, humidity: 30 + i }));
      await openThing(thing.thing_key, 'Declared boiler');
      const chart = page.getByRole('region', { name: 'Telemetry', exact: true });
      await chart.getByText('5 points · temperature', { exact: true }).waitFor();
      await send({ thing_key: thing.thing_key, data: { temperature: 70, humidity: 40 } });
      await chart.getByText('6 points · temperature', { exact: true }).waitFor();
      await page.reload();
      await chart.getByText('6 points · temperature', { exact: true }).waitFor();
      // Latest values still lists every metric the thing sent.
      await page.getByRole('region', { name: 'Latest values', exact: true }).getByText('40', { exact: true }).waitFor();
    });

    it("when the range ends on a labelled tick then the chart's last time label is drawn whole, inside the canvas", async () => {
      // The browser's clock stands at the last midnight (UTC): the range ends on the tick labelled
      // `12:00 AM` over the new day's date, the widest of the axis, at the plot's right edge.
      const midnight = Math.floor(Date.now() / 86_400_000) * 86_400_000;
      const thingKey = unique('midnight');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Night boiler' })).status, 200);
      const events = Array.from({ length: 5 }, (_, i) => ({
        thing_key: thingKey,
        timestamp: midnight - (5 - i) * 600_000,
        data: { temperature: 60 + i },
      }));
      await send({ events });
      const other = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' });
      const night = await other.newPage();
      problems.push(...watchProblems(night));
      try {
        await night.clock.install({ time: midnight });
        await night.goto(`${api.url}/console/things/${thingKey}`);
        await signIn(night);
        const chart = night.getByRole('region', { name: 'Telemetry', exact: true });
        await chart.getByText('5 points · temperature', { exact: true }).waitFor();
        const ink = await inkAtRightEdge(chart.locator('.chart canvas').first());
        await screenshot(night, `${store.name}-thing-midnight`);
        assert.deepEqual(ink, { labels: true, edge: 0 }, 'time labels drawn, none reaching the canvas edge');
      } finally {
        await other.close();
      }
    });

    it("when a thing has more alerts than its panel shows then the panel says how many and links to them all, and the Alerts page lists that thing's alone, live", async () => {
      const thingKey = unique('alarmed');
      const otherKey = unique('quiet');
      for (const [key, name] of [
        [thingKey, 'Alarmed press'],
        [otherKey, 'Quiet press'],
      ])
        assert.equal((await device.register({ thing_key: key, name })).status, 200);
      const raise = async (key: string, message: string) => {
        const raised = await device.post('/api/v3/alerts.json', { alert: { thing_key: key, message, alert_type: 1 } });
        assert.equal(raised.status, 200, raised.text);
      };
      for (let i = 1; i <= 23; i++) await raise(thingKey, `Pressure high #${i}`);
      await raise(otherKey, 'Quiet press door open');
      await openThing(thingKey, 'Alarmed press');
      const panel = page.getByRole('region', { name: 'Alerts', exact: true });
      await panel.getByText('The latest 20 of 23 alerts.', { exact: false }).waitFor();
      assert.equal(await panel.getByRole('row').count(), 21, 'a header and 20 alerts');
      // The newest first: #23 is shown, #3 and older are left to the Alerts page.
      await panel.getByText('Pressure high #23', { exact: true }).waitFor();
      assert.equal(await panel.getByText('Pressure high #3', { exact: true }).count(), 0);
      await shot('alerts-panel-full');
      await panel.getByRole('link', { name: 'All alerts of this thing', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Alerts', exact: true }).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('thing'), thingKey);
      await page.getByText('Pressure high #1', { exact: true }).waitFor();
      await page.getByText(`Alerts of Alarmed press (${thingKey}).`, { exact: false }).waitFor();
      assert.equal(await page.getByRole('table').getByRole('row').count(), 24, 'a header and 23 alerts');
      assert.equal(await page.getByText('Quiet press door open', { exact: true }).count(), 0);
      // Live: the other thing's new alert stays out, this thing's comes in.
      await raise(otherKey, 'Quiet press door open again');
      await raise(thingKey, 'Pressure high #24');
      await page.getByText('Pressure high #24', { exact: true }).waitFor();
      assert.equal(await page.getByText('Quiet press door open again', { exact: true }).count(), 0);
      await shot('alerts-of-a-thing');
      await assertAccessible(page, 'the Alerts page filtered on a thing');
      await page.getByRole('button', { name: "Show every thing's alerts", exact: true }).click();
      await page.getByText('Quiet press door open again', { exact: true }).waitFor();
      assert.equal(new URL(page.url()).searchParams.get('thing'), null);
    });

    it('when a thing goes offline while its page is open then the page says Offline', async () => {
      const token = await api.adminToken();
      const template = await api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: unique('Fast'), heartbeat_interval: 2, idle_timeout: 4 } },
      });
      assert.equal(template.status, 200, template.text);
      const thing = await createThing(api, token, {
        name: 'Short-lived',
        thing_template_key: template.body.thing_template.thing_template_key,
        tags: ['hall-b', 'pilot'],
      });
      await send({ thing_key: thing.thing_key, data: { temperature: 20 } });
      await openThing(thing.thing_key, 'Short-lived');
      const status = page.getByText(/ · (Online|Offline)/);
      assert.match((await status.textContent()) ?? '', / · Tags: hall-b, pilot$/, 'its tags, as New thing took them');
      await until(
        async () => (await api.request('GET', `/api/v3/things/${thing.thing_key}`, { token })).body.thing.alive,
        (alive) => alive === false,
        'the API says alive',
        15_000,
      );
      await until(
        async () => (await status.textContent()) ?? '',
        (text) => text.includes('Offline'),
        'the status',
      );
    });

    it('when a role may read things only then the thing page says plainly what it may not read, asks nothing it would be refused, and offers no Send instruction', async () => {
      const token = await api.adminToken();
      const thingKey = unique('valve');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Valve', bi_directional: true })).status, 200);
      await send({ thing_key: thingKey, data: { temperature: 20 } });
      const user = await userWithAbilities(api, token, [11]);
      const refused = await api.request('GET', `/api/v3/things/${thingKey}/instructions`, { token: user.token });
      assert.equal(refused.status, 403);
      const other = await browser.newContext();
      const limited = await other.newPage();
      try {
        await limited.goto(`${api.url}/console/things/${thingKey}`);
        const asked = limited.waitForResponse((r) => r.url().endsWith('/api/v3/caller'));
        const posted = postsTo(limited, '/instructions');
        const read: string[] = [];
        limited.on('response', (r) => {
          if (/\/api\/v3\/(alerts|things\/[^/]+\/instructions|query\/thing_data)/.test(r.url())) read.push(r.url());
        });
        await signIn(limited, user.email, user.password);
        await limited.getByRole('heading', { level: 1, name: 'Valve', exact: true }).waitFor();
        for (const [panel, said] of [
          ['Telemetry', "Your role may not read this thing's events."],
          ['Alerts', 'Your role may not read alerts.'],
          ['Instructions', 'Your role may not read instructions.'],
        ] as const) {
          const region = limited.getByRole('region', { name: panel, exact: true });
          await region.getByText(said, { exact: true }).waitFor();
          assert.equal(await region.getByRole('alert').count(), 0, `${panel}: said plainly, not as an alert`);
        }
        assert.equal((await asked).status(), 200);
        // The events are read once the role is known, and not by a role that may not read them.
        assert.deepEqual(read, [], 'nothing is asked in vain');
        assert.equal(await limited.getByText('Live telemetry is unavailable', { exact: false }).count(), 0);
        assert.equal(await limited.getByText(refused.body.message, { exact: false }).count(), 0);
        assert.deepEqual(posted, [], 'what the role may do is asked, not probed');
        assert.equal(await limited.getByRole('button', { name: 'Send instruction' }).count(), 0);
        await screenshot(limited, `${store.name}-thing-few-permissions`);
      } finally {
        await other.close();
      }
    });

    it('when a role may read instructions but not send them then the list is shown without Send instruction', async () => {
      const token = await api.adminToken();
      const thingKey = unique('gate');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Gate', bi_directional: true })).status, 200);
      const user = await userWithAbilities(api, token, [11, 41, 121]);
      const other = await browser.newContext();
      const limited = await other.newPage();
      try {
        await limited.goto(`${api.url}/console/things/${thingKey}`);
        const asked = limited.waitForResponse((r) => r.url().endsWith('/api/v3/caller'));
        const posted = postsTo(limited, '/instructions');
        await signIn(limited, user.email, user.password);
        await limited.getByRole('heading', { name: 'Instructions', exact: true }).waitFor();
        assert.equal((await asked).status(), 200);
        assert.deepEqual(posted, [], 'what the role may do is asked, not probed');
        assert.equal(await limited.getByRole('button', { name: 'Send instruction' }).count(), 0);
      } finally {
        await other.close();
      }
      // An account admin is offered it.
      await openThing(thingKey, 'Gate');
      await page.getByRole('button', { name: 'Send instruction', exact: true }).waitFor();
    });

    it('when the journeys are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(problems, []);
    });
  });
}

/** The URLs of the POST requests the page sends whose URL holds `part`, from now on. */
function postsTo(page: Page, part: string): string[] {
  const urls: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.url().includes(part)) urls.push(request.url());
  });
  return urls;
}
