/**
 * Dashboards in a real browser against a real server (docs/console.md, "Dashboards"): one built from
 * nothing with every widget type, its layout changed from the keyboard and saved, a variable switched,
 * every live widget following a device (value, gauge, chart, things table, alerts, map), full screen
 * without the navigation staying live across a realtime connection closed as a restarting server
 * closes it, export then import giving the same dashboard, and Markdown and titles holding XSS
 * payloads drawn inert. The widget form: what the API would refuse marked on `Add` (invalid, described,
 * focused), a refusal of `Save` naming the widget, a widget edited in place, new widgets placed in the
 * first free spot, and a time series' legend shown whole inside its widget, wide and on a phone.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page, Route, WebSocket } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import {
  browserSkip,
  drawnChart,
  holdSubscriptions,
  launchBrowser,
  routeRealtime,
  SCREENSHOTS,
  screenshot,
  watchProblems,
} from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, defaultTemplateKey, postCreated } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { until } from './until.ts';

const XSS_TITLE = '<img src=x onerror=alert(1)>';
const XSS_TEXT = [
  '# Shift notes',
  '<img src=x onerror=alert(2)>',
  '<script>alert(3)</script>',
  '[click me](javascript:alert(4))',
  '![pic](javascript:alert(5))',
].join('\n\n');

for (const store of STORES) {
  describe(`dashboards in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let page: Page;
    let problems: string[];
    let token: string;
    let device: Device;
    let template: string;
    let boiler: { thing_key: string; name: string };
    let pump: { thing_key: string; name: string };
    let dashboardKey: string;
    const dialogs: string[] = [];
    /** Whether the page's dialogs are accepted (a question to leave answered yes); else dismissed. */
    let acceptDialogs = false;
    const shot = (name: string) => screenshot(page, `${store.name}-dashboards-${name}`);
    const region = (name: string) => page.getByRole('region', { name, exact: true });

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      device = new Device(api.url, await createKeyPair(api, token));
      template = await defaultTemplateKey(api, token);
      // The things stay online however long the tests before the map's take: an hour's heartbeat.
      const slow = await api.request('PUT', `/api/v3/thing_templates/${template}`, {
        token,
        body: { thing_template: { heartbeat_interval: 3600 } },
      });
      assert.equal(slow.status, 200, slow.text);
      boiler = await createThing(api, token, { name: 'Boiler', coordinates: [52.52, 13.4] });
      pump = await createThing(api, token, { name: 'Pump', coordinates: [48.14, 11.58] });
      assert.equal((await device.event({ thing_key: boiler.thing_key, data: { temp: 20 } })).status, 200);
      assert.equal((await device.event({ thing_key: pump.thing_key, data: { temp: 35.5 } })).status, 200);
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
      page = await context.newPage();
      page.setDefaultTimeout(15_000);
      problems = watchProblems(page);
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void (acceptDialogs ? dialog.accept() : dialog.dismiss());
      });
      await page.goto(`${api.url}/console/dashboards`);
      await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function stored(key: string) {
      const response = await api.request('GET', `/api/v3/dashboards/${key}`, { token });
      assert.equal(response.status, 200, response.text);
      return response.body.dashboard;
    }

    /** What the widget form is given: selects first (they change the fields shown), then things, fields, thresholds. */
    interface WidgetInput {
      selects?: Record<string, string>;
      /** The source's things, each searched by key in `Add thing` and chosen. */
      things?: string[];
      /** A value's or a gauge's thing, searched by key in `Find thing` and chosen. */
      thing?: string;
      fields?: Record<string, string>;
      /** A variable of the dashboard for the value's thing, chosen with `Use $<name>`. */
      variable?: string;
      /** Each added with `Add threshold`; the colour left as chosen for it unless given. */
      thresholds?: { from: string; color?: string }[];
    }

    async function chooseThing(form: Locator, label: string, key: string) {
      await form.getByRole('combobox', { name: label, exact: true }).fill(key);
      await form.getByRole('option', { name: key }).click();
      await form.getByRole('listitem').filter({ hasText: key }).waitFor();
    }

    async function fillWidgetForm(form: Locator, type: string, title: string, input: WidgetInput) {
      await form.getByLabel('Widget type', { exact: true }).selectOption(type);
      await form.getByLabel('Title', { exact: true }).fill(title);
      for (const [label, value] of Object.entries(input.selects ?? {}))
        await form.getByLabel(label, { exact: true }).selectOption(value);
      for (const key of input.things ?? []) await chooseThing(form, 'Add thing', key);
      if (input.thing) await chooseThing(form, 'Find thing', input.thing);
      if (input.variable) await form.getByRole('button', { name: `Use $${input.variable}`, exact: true }).click();
      for (const [label, value] of Object.entries(input.fields ?? {}))
        await form.getByLabel(label, { exact: true }).fill(value);
      for (const [i, threshold] of (input.thresholds ?? []).entries()) {
        await form.getByRole('button', { name: 'Add threshold', exact: true }).click();
        const row = form.getByRole('group', { name: `Threshold ${i + 1}`, exact: true });
        await row.getByLabel('From', { exact: true }).fill(threshold.from);
        if (threshold.color) await row.getByLabel('Colour', { exact: true }).fill(threshold.color);
      }
    }

    async function addWidget(type: string, title: string, input: WidgetInput = {}) {
      await page.getByRole('button', { name: 'Add widget', exact: true }).click();
      const form = page.getByRole('form', { name: 'Add widget' });
      await fillWidgetForm(form, type, title, input);
      await form.getByRole('button', { name: 'Add', exact: true }).click();
      await region(title).waitFor();
    }

    /** Waits for the focus to reach the control: the page moves it once it has drawn what changed. */
    async function assertFocused(control: Locator, what: string) {
      await control
        .and(page.locator(':focus'))
        .waitFor({ timeout: 5000 })
        .catch(() => assert.fail(`${what}: the focus is not there`));
    }

    /** Whether the control is marked invalid, described by `problem`, and (when asked) holds the focus. */
    async function assertMarked(control: Locator, problem: string, focused = false) {
      await control
        .and(page.locator('[aria-invalid="true"]'))
        .waitFor({ timeout: 5000 })
        .catch(() => assert.fail(`${problem}: the field is not marked aria-invalid`));
      const ids = ((await control.getAttribute('aria-describedby')) ?? '').split(' ').filter(Boolean);
      const described = await Promise.all(ids.map((id) => page.locator(`[id="${id}"]`).textContent()));
      assert.ok(described.includes(problem), `described as ${JSON.stringify(described)}, not ${problem}`);
      if (focused) await assertFocused(control, problem);
    }

    it('when there are no dashboards then New dashboard makes one by its name and opens it', async () => {
      await page.getByRole('heading', { level: 2, name: 'No dashboards yet', exact: true }).waitFor();
      await page.getByRole('button', { name: 'New dashboard', exact: true }).click();
      await page.getByLabel('Name', { exact: true }).fill('Line 3');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Line 3', exact: true }).waitFor();
      dashboardKey = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) ?? '');
      assert.equal((await stored(dashboardKey)).name, 'Line 3');
      await page.getByLabel('Time range', { exact: true }).waitFor();
    });

    it("when a widget's metrics are typed then the templates' metrics are suggested, those a list names already left out", async () => {
      await postCreated(api, token, '/api/v3/thing_templates', {
        thing_template: {
          name: 'Boilers',
          metrics: [
            { name: 'water.temperature', data_type: 'number' },
            { name: 'pressure', data_type: 'number' },
          ],
        },
      });
      /** The values the browser may suggest for an input: its datalist's options. */
      const suggested = async (input: Locator) => {
        const list = await input.getAttribute('list');
        assert.ok(list, 'the field has a list of suggestions');
        return page
          .locator(`datalist[id="${list}"] option`)
          .evaluateAll((options) => options.map((option) => option.getAttribute('value') ?? ''));
      };
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await page.getByRole('button', { name: 'Add widget', exact: true }).click();
      const form = page.getByRole('form', { name: 'Add widget' });
      await form.getByLabel('Widget type', { exact: true }).selectOption('value');
      const metric = form.getByLabel('Metric', { exact: true });
      await until(
        () => suggested(metric),
        (values) => values.includes('water.temperature'),
        "the Metric field's suggestions",
      );
      // The Default template's (learnt from the events sent) and the new template's, once each, sorted.
      assert.deepEqual(await suggested(metric), ['pressure', 'temp', 'water.temperature']);
      await form.getByLabel('Widget type', { exact: true }).selectOption('timeseries');
      const metrics = form.getByLabel('Metrics', { exact: true });
      await metrics.fill('temp, press');
      assert.deepEqual(await suggested(metrics), ['temp, pressure', 'temp, water.temperature']);
      await form.getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
    });

    it('when a widget of every type is added and saved then the API keeps them and each is a region named by its title', async () => {
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      const things = [boiler.thing_key, pump.thing_key];
      await addWidget('timeseries', 'Temperatures', { things, fields: { Metrics: 'temp' } });
      await addWidget('timeseries', 'Fleet average', {
        selects: { Source: 'thing_template_key', Template: template, Aggregate: 'avg' },
        fields: { Metrics: 'temp' },
      });
      // The first threshold keeps the colour the form chose for it (green); the second is chosen.
      await addWidget('value', 'Boiler temperature', {
        thing: boiler.thing_key,
        fields: { Metric: 'temp', Unit: '°C' },
        thresholds: [{ from: '0' }, { from: '50', color: '#b91c1c' }],
      });
      await addWidget('gauge', 'Boiler gauge', {
        thing: boiler.thing_key,
        fields: { Metric: 'temp', Min: '0', Max: '100' },
      });
      await addWidget('things', 'Boilers', {
        selects: { Source: 'thing_template_key', Template: template },
        fields: { Metrics: 'temp' },
      });
      await addWidget('alerts', 'Open alerts', { things });
      await addWidget('map', 'Plant map', { things });
      await addWidget('text', XSS_TITLE, { fields: { Text: XSS_TEXT } });
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      const dashboard = await stored(dashboardKey);
      assert.deepEqual(
        dashboard.widgets.map((w: { type: string }) => w.type),
        ['timeseries', 'timeseries', 'value', 'gauge', 'things', 'alerts', 'map', 'text'],
      );
      assert.deepEqual(dashboard.widgets[0].source, { thing_keys: things });
      assert.equal(dashboard.widgets[1].aggregate, 'avg');
      assert.deepEqual(dashboard.widgets[1].source, { thing_template_key: template });
      assert.deepEqual(dashboard.widgets[2].thresholds, [
        { from: 0, color: '#15803d' },
        { from: 50, color: '#b91c1c' },
      ]);
      // Each new widget takes the first free place, left to right then top to bottom: two to a row.
      assert.deepEqual(
        dashboard.widgets.map((w: { layout: object }) => w.layout),
        [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({ x: (i % 2) * 6, y: Math.floor(i / 2) * 4, w: 6, h: 4 })),
      );
      await region('Boiler temperature').locator('output').filter({ hasText: /^20$/ }).waitFor();
      await region('Boilers').getByRole('cell', { name: '35.5', exact: true }).waitFor();
      await region('Boilers').getByRole('cell', { name: 'Online', exact: true }).first().waitFor();
      await region('Plant map').getByRole('figure', { name: 'Map of 2 things', exact: true }).waitFor();
      await region('Temperatures').locator('canvas').first().waitFor();
      await region('Fleet average').locator('canvas').first().waitFor();
      await page.waitForLoadState('networkidle');
      await assertAccessible(page, 'a dashboard');
      await shot('every-widget');
    });

    it('when the text widget and a title hold XSS payloads then they are shown as text and never run', async () => {
      const text = region(XSS_TITLE);
      // Its headings sit below the widget's title: the page keeps one first-level heading.
      await text.getByRole('heading', { level: 3, name: 'Shift notes', exact: true }).waitFor();
      assert.equal(await page.getByRole('heading', { level: 1 }).count(), 1);
      // The Markdown image keeps its alt text, its javascript: source dropped.
      const sources = await text.locator('img').evaluateAll((images) => images.map((i) => i.getAttribute('src') ?? ''));
      assert.deepEqual(sources, ['']);
      assert.equal(await text.locator('script').count(), 0);
      assert.equal(await page.locator('[onerror]').count(), 0);
      const hrefs = await text.locator('a').evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
      assert.ok(
        hrefs.every((href) => !href.toLowerCase().startsWith('javascript')),
        hrefs.join(' '),
      );
      const shown = (await text.textContent()) ?? '';
      assert.match(shown, /<img src=x onerror=alert\(2\)>/);
      assert.match(shown, /<script>alert\(3\)<\/script>/);
      assert.deepEqual(dialogs, []);
    });

    it('when a device sends then every live widget shows it: the value in its threshold colour, the gauge, the chart, the table, the alert it raises and the map', async () => {
      const rule = await api.request('POST', '/api/v3/rules', {
        token,
        body: {
          rule: {
            name: 'Boiler hot',
            condition: 'temp > 60',
            alert_type: 2,
            alert_message: 'Boiler hot',
            trigger: 'every_event',
          },
        },
      });
      assert.equal(rule.status, 200, rule.text);
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      await region('Open alerts').getByText('No alerts.', { exact: true }).waitFor();
      const caption = region('Temperatures').locator('.chart-caption');
      const points = Number((await caption.textContent())?.match(/^(\d+) points?$/)?.[1]);
      assert.ok(points >= 1, `the chart drew the events sent before: ${await caption.textContent()}`);
      // A thing that has sent nothing is offline on the map until it does: it joins the map's things.
      const quiet = await createThing(api, token, { name: 'Quiet boiler', coordinates: [50.11, 8.68] });
      const widgets = (await stored(dashboardKey)).widgets;
      const map = widgets.find((w: { type: string }) => w.type === 'map');
      map.source.thing_keys.push(quiet.thing_key);
      const put = await api.request('PUT', `/api/v3/dashboards/${dashboardKey}`, {
        token,
        body: { dashboard: { widgets } },
      });
      assert.equal(put.status, 200, put.text);
      await page.reload();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      const markers = (fill: string) => region('Plant map').locator(`path.leaflet-interactive[fill="${fill}"]`);
      await region('Plant map').getByRole('figure', { name: 'Map of 3 things', exact: true }).waitFor();
      await markers('#6b7280').first().waitFor();
      assert.equal(await markers('#6b7280').count(), 1, 'the quiet boiler is offline on the map');
      const quietMarker = region('Plant map').getByRole('img', { name: 'Quiet boiler: Offline', exact: true });
      assert.equal(await quietMarker.getAttribute('fill'), '#6b7280', 'the marker is named for its thing and status');
      assert.equal((await device.event({ thing_key: boiler.thing_key, data: { temp: 61 } })).status, 200);
      const figure = region('Boiler temperature').locator('output');
      await figure.filter({ hasText: /^61$/ }).waitFor();
      assert.equal(
        await figure.evaluate((e) => (e as unknown as { style: { color: string } }).style.color),
        'rgb(185, 28, 28)',
      );
      await region('Boiler gauge').getByRole('img', { name: '61 on a dial from 0 to 100', exact: true }).waitFor();
      await caption.filter({ hasText: `${points + 1} points` }).waitFor();
      await region('Boilers').getByRole('cell', { name: '61', exact: true }).waitFor();
      await region('Open alerts').getByRole('cell', { name: 'Boiler hot', exact: true }).waitFor();
      await region('Boilers')
        .getByRole('row')
        .filter({ hasText: quiet.name })
        .getByRole('cell', { name: 'Offline', exact: true })
        .waitFor();
      assert.equal((await device.event({ thing_key: quiet.thing_key, data: { temp: 30 } })).status, 200);
      await region('Boilers')
        .getByRole('row')
        .filter({ hasText: quiet.name })
        .getByRole('cell', { name: 'Online', exact: true })
        .waitFor();
      await region('Plant map').getByRole('figure', { name: 'Map of 3 things', exact: true }).waitFor();
      await page.waitForFunction(
        () => (globalThis as any).document.querySelectorAll('path.leaflet-interactive[fill="#6b7280"]').length === 0,
      );
      assert.equal(await markers('#15803d').count(), 3, 'every thing on the map is online');
      await region('Plant map').getByRole('img', { name: 'Quiet boiler: Online', exact: true }).waitFor();
    });

    it('when a widget is moved and resized from the keyboard and saved then the API keeps the new layout', async () => {
      const before = (await stored(dashboardKey)).widgets[2].layout;
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      const controls = region('Boiler temperature');
      await controls.getByRole('button', { name: 'Move right', exact: true }).focus();
      await page.keyboard.press('Enter');
      await page.keyboard.press('Enter');
      await controls.getByRole('button', { name: 'Wider', exact: true }).focus();
      await page.keyboard.press('Space');
      await controls.getByRole('button', { name: 'Taller', exact: true }).focus();
      await page.keyboard.press('Enter');
      // The focused widget itself: an arrow moves it, Shift with an arrow resizes it.
      await controls.focus();
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Shift+ArrowLeft');
      await controls.getByText(`Column ${before.x + 3}, row ${before.y + 2}, ${before.w} wide`).waitFor();
      await page.getByRole('button', { name: 'Save', exact: true }).focus();
      await page.keyboard.press('Enter');
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      const after = (await stored(dashboardKey)).widgets[2].layout;
      assert.deepEqual(after, { x: before.x + 2, y: before.y + 1, w: before.w, h: before.h + 1 });
    });

    it('when a widget is dragged by its title and by its corner with the mouse and saved then the API keeps the new layout', async () => {
      const before = (await stored(dashboardKey)).widgets[2].layout;
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      const widget = region('Boiler temperature');
      // One grid step in pixels: a column or a row and the gap after it.
      const step = await page.locator('.dashboard-grid').evaluate((grid) => {
        const style = (globalThis as any).getComputedStyle(grid);
        const gap = Number.parseFloat(style.columnGap);
        return {
          x: (grid.clientWidth - gap * 11) / 12 + gap,
          y: Number.parseFloat(style.gridAutoRows) + Number.parseFloat(style.rowGap),
        };
      });
      const drag = async (from: { x: number; y: number }, columns: number, rows: number) => {
        await page.mouse.move(from.x, from.y);
        await page.mouse.down();
        await page.mouse.move(from.x + columns * step.x, from.y + rows * step.y, { steps: 12 });
        await page.mouse.up();
      };
      const heading = widget.getByRole('heading', { name: 'Boiler temperature' });
      await heading.scrollIntoViewIfNeeded();
      const title = await heading.boundingBox();
      assert.ok(title);
      await drag({ x: title.x + 10, y: title.y + title.height / 2 }, 1, 1);
      const moved = { ...before, x: Math.min(before.x + 1, 12 - before.w), y: before.y + 1 };
      await widget.getByText(`Column ${moved.x + 1}, row ${moved.y + 1}, ${moved.w} wide, ${moved.h} high`).waitFor();
      await widget.locator('.widget-resize').scrollIntoViewIfNeeded();
      const corner = await widget.locator('.widget-resize').boundingBox();
      assert.ok(corner);
      await drag({ x: corner.x + corner.width / 2, y: corner.y + corner.height / 2 }, -1, 1);
      const resized = { ...moved, w: Math.max(1, moved.w - 1), h: moved.h + 1 };
      await widget
        .getByText(`Column ${resized.x + 1}, row ${resized.y + 1}, ${resized.w} wide, ${resized.h} high`)
        .waitFor();
      await shot('dragged');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      assert.deepEqual((await stored(dashboardKey)).widgets[2].layout, resized);
    });

    it('when Save is refused over a widget then the message names it by its place from 1 and its title, and opens its form at the field', async () => {
      const doomed = await createThing(api, token, { name: 'Doomed boiler' });
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await addWidget('value', 'Nowhere', { thing: doomed.thing_key, fields: { Metric: 'temp' } });
      // Deleted after it was chosen: only the API can tell.
      assert.equal((await api.request('DELETE', `/api/v3/things/${doomed.thing_key}`, { token })).status, 200);
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'Widget 9, “Nowhere”: Thing names no known resource' });
      await alert.waitFor();
      assert.equal(
        await alert.textContent(),
        `Widget 9, “Nowhere”: Thing names no known resource (${doomed.thing_key}) Edit “Nowhere”`,
      );
      await alert.getByRole('button', { name: 'Edit “Nowhere”', exact: true }).click();
      const form = page.getByRole('form', { name: 'Edit widget 9, “Nowhere”', exact: true });
      await assertMarked(
        form.getByRole('combobox', { name: 'Find thing', exact: true }),
        `Names no known resource (${doomed.thing_key}).`,
        true,
      );
      await shot('save-refused');
      await form.getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      assert.equal((await stored(dashboardKey)).widgets.length, 8);
    });

    it('when Full screen is followed then the dashboard shows without the navigation and stays live', async (t) => {
      await page.getByRole('link', { name: 'Full screen', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Line 3', exact: true }).waitFor();
      assert.equal(new URL(page.url()).pathname, `/console/dashboards/${dashboardKey}/full`);
      assert.equal(await page.getByRole('navigation').count(), 0);
      assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0);
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      await region('Boiler temperature').locator('output').filter({ hasText: '61' }).waitFor();
      assert.equal((await device.event({ thing_key: boiler.thing_key, data: { temp: 42.5 } })).status, 200);
      await region('Boiler temperature').locator('output').filter({ hasText: '42.5' }).waitFor();
      await shot('full-screen');
      // A server restarting closes the realtime connection with 1012: the wall screen connects again
      // by itself and stays live.
      const { sockets } = await routeRealtime(t, page);
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Line 3', exact: true }).waitFor();
      assert.equal(await page.getByRole('navigation').count(), 0);
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      assert.equal(sockets.length, 1);
      await sockets[0]?.close({ code: 1012, reason: 'restarting' });
      assert.equal((await device.event({ thing_key: boiler.thing_key, data: { temp: 43.5 } })).status, 200);
      await region('Boiler temperature').locator('output').filter({ hasText: '43.5' }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      assert.ok(sockets.length >= 2, 'a new connection');
      // The boiler's last value as the tests after this one expect it.
      assert.equal((await device.event({ thing_key: boiler.thing_key, data: { temp: 42.5 } })).status, 200);
      await region('Boiler temperature').locator('output').filter({ hasText: '42.5' }).waitFor();
      await page.getByRole('link', { name: 'Leave full screen', exact: true }).click();
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
    });

    it('when a dashboard is exported then imported then the new one has the same fields, new keys and a name of its own', async () => {
      const downloading = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Export', exact: true }).click();
      const download = await downloading;
      assert.equal(download.suggestedFilename(), 'Line 3.json');
      const path = await download.path();
      const exported = JSON.parse(await readFile(path, 'utf8'));
      const original = await stored(dashboardKey);
      assert.deepEqual(exported, original);
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Dashboards', exact: true })
        .click();
      await page.getByRole('button', { name: 'Import dashboard', exact: true }).click();
      await page.getByLabel('File', { exact: true }).setInputFiles(path);
      await page.getByRole('button', { name: 'Import', exact: true }).click();
      // The organisation has a Line 3 (the one exported): the copy is told apart in lists.
      await page.getByRole('heading', { level: 1, name: 'Line 3 (2)', exact: true }).waitFor();
      await page.waitForURL((url) => !url.pathname.endsWith(`/${dashboardKey}`));
      const importedKey = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) ?? '');
      const imported = await stored(importedKey);
      assert.notEqual(importedKey, dashboardKey);
      const fields = (d: typeof original) => ({
        name: d.name,
        description: d.description,
        time_range: d.time_range,
        variables: d.variables,
        widgets: d.widgets.map(({ widget_key: _, ...w }: { widget_key: string }) => w),
      });
      assert.deepEqual(fields(imported), { ...fields(original), name: 'Line 3 (2)' });
      const oldKeys = new Set(original.widgets.map((w: { widget_key: string }) => w.widget_key));
      assert.ok(imported.widgets.every((w: { widget_key: string }) => !oldKeys.has(w.widget_key)));
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Dashboards', exact: true })
        .click();
      await page.getByRole('link', { name: 'Line 3 (2)', exact: true }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Line 3', exact: true }).count(), 1);
      await assertAccessible(page, 'the dashboards list');
    });

    it('when a variable is switched then its widgets show the chosen thing', async () => {
      const response = await api.request('POST', '/api/v3/dashboards', {
        token,
        body: {
          dashboard: {
            name: 'Any machine',
            variables: [{ name: 'machine', thing_template_key: template }],
            widgets: [
              {
                type: 'value',
                title: 'Machine temperature',
                thing_key: '$machine',
                metric: 'temp',
                unit: '°C',
                thresholds: [
                  { from: 0, color: '#15803d' },
                  { from: 40, color: '#c2410c' },
                ],
                layout: { x: 0, y: 0, w: 3, h: 2 },
              },
              {
                type: 'gauge',
                title: 'Machine gauge',
                thing_key: '$machine',
                metric: 'temp',
                unit: '°C',
                min: 0,
                max: 100,
                layout: { x: 3, y: 0, w: 3, h: 3 },
              },
              {
                type: 'things',
                title: 'Machines',
                source: { thing_template_key: template },
                metrics: ['temp'],
                layout: { x: 6, y: 0, w: 6, h: 3 },
              },
              {
                type: 'timeseries',
                title: 'Machine history',
                source: { thing_keys: ['$machine'] },
                metrics: ['temp'],
                layout: { x: 0, y: 3, w: 8, h: 4 },
              },
              {
                type: 'map',
                title: 'Where',
                source: { thing_template_key: template },
                layout: { x: 8, y: 3, w: 4, h: 4 },
              },
              {
                type: 'text',
                title: 'Notes',
                text: 'Call **maintenance** above 80 °C.',
                layout: { x: 0, y: 2, w: 3, h: 1 },
              },
            ],
          },
        },
      });
      assert.equal(response.status, 200, response.text);
      await page.goto(`${api.url}/console/dashboards/${response.body.dashboard.dashboard_key}`);
      await page.getByRole('heading', { level: 1, name: 'Any machine', exact: true }).waitFor();
      const choice = page.getByLabel('machine', { exact: true });
      await region('Machine temperature').locator('output').filter({ hasText: '42.5' }).waitFor();
      assert.equal(await choice.inputValue(), boiler.thing_key);
      await choice.selectOption({ label: 'Pump' });
      await region('Machine temperature').locator('output').filter({ hasText: '35.5' }).waitFor();
      await region('Machines').getByRole('cell', { name: '35.5', exact: true }).waitFor();
      await page.waitForLoadState('networkidle');
      await assertAccessible(page, 'a dashboard with a variable');
      // The picture of docs/console.md: the window as a person sees it.
      await page.screenshot({ path: join(SCREENSHOTS, 'docs-dashboard.png') });
      await shot('variable');
    });

    it('when a widget names a thing that is gone then it is drawn as missing and the rest of the dashboard is drawn', async () => {
      const gone = await createThing(api, token, { name: 'Gone' });
      const response = await api.request('POST', '/api/v3/dashboards', {
        token,
        body: {
          dashboard: {
            name: 'Half gone',
            widgets: [
              {
                type: 'value',
                title: 'Gone value',
                thing_key: gone.thing_key,
                metric: 'temp',
                layout: { x: 0, y: 0, w: 4, h: 2 },
              },
              {
                type: 'things',
                title: 'Some things',
                source: { thing_keys: [gone.thing_key, boiler.thing_key] },
                layout: { x: 4, y: 0, w: 8, h: 3 },
              },
            ],
          },
        },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal((await api.request('DELETE', `/api/v3/things/${gone.thing_key}`, { token })).status, 200);
      await page.goto(`${api.url}/console/dashboards/${response.body.dashboard.dashboard_key}`);
      await page.getByRole('heading', { level: 1, name: 'Half gone', exact: true }).waitFor();
      await region('Gone value').getByText(`Missing (not found, or not yours to read): ${gone.thing_key}`).waitFor();
      await region('Some things').getByText(`Missing (not found, or not yours to read): ${gone.thing_key}`).waitFor();
      await region('Some things').getByRole('link', { name: 'Boiler', exact: true }).waitFor();
      assert.equal(await page.getByRole('alert').count(), 0);
    });

    it('when a thing comes online before the things widget is subscribed then the widget shows it', async (t) => {
      const late = await createThing(api, token, { name: 'Late starter' });
      const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
        dashboard: {
          name: 'Late',
          widgets: [
            {
              type: 'things',
              title: 'Starters',
              source: { thing_keys: [late.thing_key] },
              layout: { x: 0, y: 0, w: 8, h: 3 },
            },
          ],
        },
      });
      // The widget's subscriptions reach the server only once the test lets them.
      const held = await holdSubscriptions(t, page, () => true);
      await page.goto(`${api.url}/console/dashboards/${dashboard.dashboard_key}`);
      const row = region('Starters').getByRole('row').filter({ hasText: 'Late starter' });
      await row.getByRole('cell', { name: 'Offline', exact: true }).waitFor();
      await until(
        async () => held.count,
        (n) => n >= 2,
        'the widget subscribes to its things and their events',
        15_000,
      );
      assert.equal((await device.event({ thing_key: late.thing_key, data: { temp: 20 } })).status, 200);
      held.release();
      await row.getByRole('cell', { name: 'Online', exact: true }).waitFor();
    });

    it('when a thing sends and raises an alert before the widgets are subscribed then its value, chart and alerts widgets show them', async (t) => {
      const late = await createThing(api, token, { name: 'Late sender' });
      // A minute before: the chart's points are a second apart at least.
      const sent = { thing_key: late.thing_key, timestamp: Date.now() - 60_000, data: { temp: 10 } };
      assert.equal((await device.event(sent)).status, 200);
      await postCreated(api, token, '/api/v3/rules', {
        rule: {
          name: 'Pressure high',
          condition: 'pressure > 5',
          alert_type: 2,
          alert_message: 'Pressure high',
          trigger: 'every_event',
        },
      });
      const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
        dashboard: {
          name: 'Late sender',
          widgets: [
            {
              type: 'value',
              title: 'Late value',
              thing_key: late.thing_key,
              metric: 'temp',
              layout: { x: 0, y: 0, w: 3, h: 2 },
            },
            {
              type: 'timeseries',
              title: 'Late line',
              source: { thing_keys: [late.thing_key] },
              metrics: ['temp'],
              layout: { x: 3, y: 0, w: 9, h: 4 },
            },
            {
              type: 'alerts',
              title: 'Late alerts',
              source: { thing_keys: [late.thing_key] },
              layout: { x: 0, y: 4, w: 12, h: 3 },
            },
          ],
        },
      });
      // The widgets' subscriptions reach the server only once the test lets them.
      const held = await holdSubscriptions(t, page, () => true);
      await page.goto(`${api.url}/console/dashboards/${dashboard.dashboard_key}`);
      await region('Late value').locator('output').filter({ hasText: /^10$/ }).waitFor();
      const caption = region('Late line').locator('.chart-caption');
      await caption.filter({ hasText: /^1 point$/ }).waitFor();
      await region('Late alerts').getByText('No alerts.', { exact: true }).waitFor();
      await until(
        async () => held.count,
        (n) => n >= 3,
        'the value, the chart and the alerts widgets subscribe',
        15_000,
      );
      assert.equal((await device.event({ thing_key: late.thing_key, data: { temp: 20, pressure: 9 } })).status, 200);
      await until(
        async () => (await api.request('GET', '/api/v3/alerts', { token })).body.alerts,
        (alerts: { thing_key: string }[]) => alerts.some((a) => a.thing_key === late.thing_key),
        'the rule raises its alert',
        15_000,
      );
      held.release();
      await region('Late value').locator('output').filter({ hasText: /^20$/ }).waitFor();
      await caption.filter({ hasText: /^2 points$/ }).waitFor();
      await region('Late alerts').getByRole('cell', { name: 'Pressure high', exact: true }).waitFor();
    });

    it('when a time series took live points and is read again after a lost connection then its caption counts what the read brought', async (t) => {
      const gap = await createThing(api, token, { name: 'Gap line' });
      const minuteAgo = { thing_key: gap.thing_key, timestamp: Date.now() - 60_000, data: { temp: 1 } };
      assert.equal((await device.event(minuteAgo)).status, 200);
      const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
        dashboard: {
          name: 'Gap line',
          widgets: [
            {
              type: 'timeseries',
              title: 'Gap temperatures',
              source: { thing_keys: [gap.thing_key] },
              metrics: ['temp'],
              layout: { x: 0, y: 0, w: 12, h: 4 },
            },
          ],
        },
      });
      const accepted: string[] = [];
      const listen = (socket: WebSocket) =>
        socket.on('framereceived', (frame) => {
          if (String(frame.payload).includes('"type":"subscribed"')) accepted.push(String(frame.payload));
        });
      page.on('websocket', listen);
      t.after(() => page.off('websocket', listen));
      const route = await routeRealtime(t, page);
      await page.goto(`${api.url}/console/dashboards/${dashboard.dashboard_key}`);
      const caption = region('Gap temperatures').locator('.chart-caption');
      await caption.filter({ hasText: /^1 point$/ }).waitFor();
      await until(
        async () => accepted.length,
        (n) => n >= 1,
        'the chart is subscribed',
        15_000,
      );
      // Taken live, the caption counted in place.
      const halfMinuteAgo = { thing_key: gap.thing_key, timestamp: Date.now() - 30_000, data: { temp: 2 } };
      assert.equal((await device.event(halfMinuteAgo)).status, 200);
      await caption.filter({ hasText: /^2 points$/ }).waitFor();
      await route.drop();
      await page.getByRole('status').filter({ hasText: 'Connection lost' }).waitFor();
      assert.equal((await device.event({ thing_key: gap.thing_key, data: { temp: 3 } })).status, 200);
      route.allow = true;
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor({ timeout: 30_000 });
      await caption.filter({ hasText: /^3 points$/ }).waitFor();
    });

    it('when a thing sent twice in one second then its time series reads both points', async () => {
      const twice = await createThing(api, token, { name: 'Twice a second' });
      const second = Math.floor(Date.now() / 1000) * 1000 - 60_000;
      for (const temp of [5, 6])
        assert.equal(
          (await device.event({ thing_key: twice.thing_key, timestamp: second, data: { temp } })).status,
          200,
        );
      const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
        dashboard: {
          name: 'Twice a second',
          widgets: [
            {
              type: 'timeseries',
              title: 'Twice temperatures',
              source: { thing_keys: [twice.thing_key] },
              metrics: ['temp'],
              layout: { x: 0, y: 0, w: 12, h: 4 },
            },
          ],
        },
      });
      await page.goto(`${api.url}/console/dashboards/${dashboard.dashboard_key}`);
      await region('Twice temperatures')
        .locator('.chart-caption')
        .filter({ hasText: /^2 points$/ })
        .waitFor();
    });

    it("when a widget's first read of its thing finds the server restarting then it shows the failure, then the thing once read again, never Missing", async (t) => {
      const flaky = await createThing(api, token, { name: 'Flaky reader' });
      const sent = { thing_key: flaky.thing_key, timestamp: Date.now() - 60_000, data: { temp: 64.5 } };
      assert.equal((await device.event(sent)).status, 200);
      const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
        dashboard: {
          name: 'Flaky',
          widgets: [
            {
              type: 'value',
              title: 'Flaky value',
              thing_key: flaky.thing_key,
              metric: 'temp',
              layout: { x: 0, y: 0, w: 4, h: 2 },
            },
            {
              type: 'things',
              title: 'Flaky things',
              source: { thing_keys: [flaky.thing_key] },
              layout: { x: 4, y: 0, w: 8, h: 3 },
            },
          ],
        },
      });
      // The first two reads of the thing (the value's and the table's source) are answered as a proxy
      // does while the server restarts; the value's subscription is held until the test lets it.
      const thingPath = `/api/v3/things/${flaky.thing_key}`;
      let refused = 0;
      const restarting = async (route: Route) => {
        if (refused >= 2) return route.continue();
        refused++;
        await route.fulfill({ status: 503, contentType: 'text/html', body: '<h1>Service Unavailable</h1>' });
      };
      await page.route((url) => url.pathname === thingPath, restarting);
      t.after(() => page.unroute((url) => url.pathname === thingPath, restarting));
      const held = await holdSubscriptions(t, page, (subscription) => subscription.topic === 'events');
      await page.goto(`${api.url}/console/dashboards/${dashboard.dashboard_key}`);
      const value = region('Flaky value');
      await value.getByRole('alert').filter({ hasText: 'The server cannot be reached' }).waitFor();
      await value.getByRole('button', { name: 'Retry', exact: true }).waitFor();
      await shot('value-unreachable');
      // The table's source is read again by itself.
      await region('Flaky things').getByRole('link', { name: 'Flaky reader', exact: true }).waitFor();
      held.release();
      await value
        .locator('output')
        .filter({ hasText: /^64.5$/ })
        .waitFor();
      assert.equal(await value.getByRole('alert').count(), 0);
      assert.equal(await page.getByText(/^Missing/).count(), 0);
    });

    it('when a variable is added in the editor then a widget may name it, its control chooses the thing, and a bad name is refused naming the field', async () => {
      const created = await api.request('POST', '/api/v3/dashboards', {
        token,
        body: { dashboard: { name: 'Chooser' } },
      });
      assert.equal(created.status, 200, created.text);
      const key = created.body.dashboard.dashboard_key;
      await page.goto(`${api.url}/console/dashboards/${key}`);
      await page.getByRole('heading', { level: 1, name: 'Chooser', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      const variables = page.getByRole('form', { name: 'Variables' });
      await variables.getByLabel('Variable name', { exact: true }).fill('1st');
      await variables.getByRole('button', { name: 'Add variable', exact: true }).click();
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'dashboard.variables[0].name' }).waitFor();
      await variables.getByRole('button', { name: 'Remove variable 1st', exact: true }).click();
      await variables.getByLabel('Variable name', { exact: true }).fill('machine');
      await variables.getByLabel('Template', { exact: true }).selectOption(template);
      await variables.getByRole('button', { name: 'Add variable', exact: true }).click();
      await addWidget('value', 'Chosen temperature', { variable: 'machine', fields: { Metric: 'temp' } });
      await assertAccessible(page, 'the dashboard editor with a variable');
      await shot('variables-editing');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      const saved = await stored(key);
      assert.deepEqual(saved.variables, [{ name: 'machine', thing_template_key: template }]);
      assert.equal(saved.widgets[0].thing_key, '$machine');
      const choice = page.getByLabel('machine', { exact: true });
      await choice.selectOption({ label: 'Pump' });
      await region('Chosen temperature').locator('output').filter({ hasText: '35.5' }).waitFor();
      await shot('variables-editor');
    });

    it('when Add is given a widget the API would refuse then each bad field is marked and described, the first takes the focus, and nothing is added', async () => {
      const created = await api.request('POST', '/api/v3/dashboards', {
        token,
        body: { dashboard: { name: 'Checks' } },
      });
      assert.equal(created.status, 200, created.text);
      const key = created.body.dashboard.dashboard_key;
      await page.goto(`${api.url}/console/dashboards/${key}`);
      const empty = page.getByText(/^This dashboard has no widgets yet/);
      await page.getByRole('heading', { level: 1, name: 'Checks', exact: true }).waitFor();
      assert.equal(await empty.textContent(), 'This dashboard has no widgets yet: Edit adds them.');
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      // While edited, Edit is gone: the note names the control that is there.
      assert.equal(await empty.textContent(), 'This dashboard has no widgets yet: Add widget adds one.');
      await page.getByRole('button', { name: 'Add widget', exact: true }).click();
      const form = page.getByRole('form', { name: 'Add widget' });
      assert.equal(await empty.textContent(), 'This dashboard has no widgets yet: the form above adds one.');
      const type = form.getByLabel('Widget type', { exact: true });
      await assertFocused(type, 'the form when it opens');
      // The types by their names, not the API's ids.
      assert.deepEqual(await type.locator('option').allTextContents(), [
        'Time series',
        'Value',
        'Gauge',
        'Things table',
        'Alerts',
        'Map',
        'Text',
      ]);

      // An alerts widget left on Source "Things" with none chosen: Save would refuse its thing_keys.
      await fillWidgetForm(form, 'alerts', 'Alerts of nothing', {});
      await form.getByRole('button', { name: 'Add', exact: true }).click();
      await assertMarked(
        form.getByRole('combobox', { name: 'Add thing', exact: true }),
        'Choose at least one thing.',
        true,
      );
      assert.equal(await region('Alerts of nothing').count(), 0, 'nothing is added');

      // A time series with no title, no things and nine metrics: each marked, the first (Title) focused.
      await fillWidgetForm(form, 'timeseries', '', { fields: { Metrics: 'a, b, c, d, e, f, g, h, i' } });
      await form.getByRole('button', { name: 'Add', exact: true }).click();
      await assertMarked(form.getByLabel('Title', { exact: true }), 'Give the widget a title.', true);
      await assertMarked(form.getByRole('combobox', { name: 'Add thing', exact: true }), 'Choose at least one thing.');
      await assertMarked(form.getByLabel('Metrics', { exact: true }), 'At most 8 metrics (9 given).');
      await assertAccessible(page, 'the widget form with its problems marked');
      await shot('widget-form-problems');

      // A value whose threshold has no value, then thresholds out of order; each colour chosen for it.
      await fillWidgetForm(form, 'value', 'Boiler hot', {
        thing: boiler.thing_key,
        fields: { Metric: 'temp' },
        thresholds: [{ from: '' }],
      });
      await form.getByRole('button', { name: 'Add', exact: true }).click();
      const first = form.getByRole('group', { name: 'Threshold 1', exact: true });
      await assertMarked(first.getByLabel('From', { exact: true }), 'Give the value this colour starts at.', true);
      assert.equal(await first.getByLabel('Colour', { exact: true }).inputValue(), '#15803d');
      await first.getByLabel('From', { exact: true }).fill('80');
      assert.equal(await first.getByLabel('From', { exact: true }).getAttribute('aria-invalid'), null);
      await form.getByRole('button', { name: 'Add threshold', exact: true }).click();
      const second = form.getByRole('group', { name: 'Threshold 2', exact: true });
      assert.equal(await second.getByLabel('Colour', { exact: true }).inputValue(), '#c2410c');
      await second.getByLabel('From', { exact: true }).fill('50');
      await form.getByRole('button', { name: 'Add', exact: true }).click();
      await assertMarked(
        second.getByLabel('From', { exact: true }),
        'Must be above the threshold before it (80).',
        true,
      );
      await second.getByLabel('From', { exact: true }).fill('90');
      await form.getByRole('button', { name: 'Add', exact: true }).click();
      await region('Boiler hot').waitFor();

      // A gauge with no thing, whose Max is not above its Min.
      await page.getByRole('button', { name: 'Add widget', exact: true }).click();
      const gauge = page.getByRole('form', { name: 'Add widget' });
      await fillWidgetForm(gauge, 'gauge', 'Boiler dial', { fields: { Metric: 'temp', Min: '10', Max: '5' } });
      await gauge.getByRole('button', { name: 'Add', exact: true }).click();
      await assertMarked(gauge.getByRole('combobox', { name: 'Find thing', exact: true }), 'Choose a thing.', true);
      await assertMarked(gauge.getByLabel('Max', { exact: true }), 'Must be above Min (10).');
      await chooseThing(gauge, 'Find thing', boiler.thing_key);
      await gauge.getByLabel('Max', { exact: true }).fill('100');
      await gauge.getByRole('button', { name: 'Add', exact: true }).click();
      await region('Boiler dial').waitFor();

      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      const saved = await stored(key);
      assert.deepEqual(saved.widgets[0].thresholds, [
        { from: 80, color: '#15803d' },
        { from: 90, color: '#c2410c' },
      ]);
      // The second widget beside the first, not below it.
      assert.deepEqual(
        saved.widgets.map((w: { layout: object }) => w.layout),
        [
          { x: 0, y: 0, w: 6, h: 4 },
          { x: 6, y: 0, w: 6, h: 4 },
        ],
      );
    });

    it('when a widget is edited then its form holds its settings and Apply changes it in place, keeping its key and layout', async () => {
      await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
      await page.getByRole('heading', { level: 1, name: 'Line 3', exact: true }).waitFor();
      const before = (await stored(dashboardKey)).widgets[2];
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await region('Boiler temperature').getByRole('button', { name: 'Edit widget', exact: true }).click();
      const form = page.getByRole('form', { name: 'Edit widget 3, “Boiler temperature”', exact: true });
      assert.equal(await form.getByLabel('Widget type', { exact: true }).inputValue(), 'value');
      assert.equal(await form.getByLabel('Title', { exact: true }).inputValue(), 'Boiler temperature');
      // Kept by key, the thing is named as it is now.
      const thing = form.getByRole('list', { name: 'Thing chosen' }).getByRole('listitem');
      await thing.filter({ hasText: `Boiler ${boiler.thing_key}` }).waitFor();
      assert.equal(await form.getByLabel('Metric', { exact: true }).inputValue(), 'temp');
      assert.equal(await form.getByLabel('Unit', { exact: true }).inputValue(), '°C');
      const second = form.getByRole('group', { name: 'Threshold 2', exact: true });
      assert.equal(await second.getByLabel('From', { exact: true }).inputValue(), '50');
      assert.equal(await second.getByLabel('Colour', { exact: true }).inputValue(), '#b91c1c');
      await assertAccessible(page, 'a widget being edited');
      await shot('widget-edit');
      await form.getByLabel('Title', { exact: true }).fill('Boiler now');
      await second.getByLabel('Colour', { exact: true }).fill('#7e22ce');
      await form.getByRole('button', { name: 'Apply', exact: true }).click();
      const edited = region('Boiler now');
      await edited.waitFor();
      await assertFocused(edited, 'the widget once its form is applied');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      const after = (await stored(dashboardKey)).widgets[2];
      assert.deepEqual(after, {
        ...before,
        title: 'Boiler now',
        thresholds: [
          { from: 0, color: '#15803d' },
          { from: 50, color: '#7e22ce' },
        ],
      });
    });

    it('when a widget is added and not saved then leaving the dashboard asks first: staying keeps the edit, leaving drops it', async () => {
      await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
      await page.getByRole('heading', { level: 1, name: 'Line 3', exact: true }).waitFor();
      const widgets = (await stored(dashboardKey)).widgets.length;
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await addWidget('text', 'Not saved yet', { fields: { Text: 'draft' } });
      const asked = dialogs.length;
      const questions = () => dialogs.slice(asked);
      try {
        const things = page.getByRole('navigation').getByRole('link', { name: 'Things', exact: true });
        await things.click();
        await until(
          async () => questions().length,
          (n) => n === 1,
          'the question on following a link',
        );
        assert.match(questions()[0] ?? '', /not saved/);
        await region('Not saved yet').waitFor();
        assert.match(new URL(page.url()).pathname, /\/dashboards\//, 'still on the dashboard');
        // Back asks too, and staying puts the dashboard's address back.
        await page.evaluate('history.back()');
        await until(
          async () => questions().length,
          (n) => n === 2,
          'the question on Back',
        );
        await until(
          async () => new URL(page.url()).pathname,
          (path) => path.includes('/dashboards/'),
          'the address',
        );
        await region('Not saved yet').waitFor();
        acceptDialogs = true;
        await things.click();
        await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
      } finally {
        acceptDialogs = false;
      }
      assert.equal((await stored(dashboardKey)).widgets.length, widgets, 'nothing saved');
      // Saved work asks nothing.
      await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await page.getByRole('navigation').getByRole('link', { name: 'Things', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
      assert.equal(questions().length, 3, 'an edit that changed nothing is left without a question');
      // Work just saved asks nothing either, even when the page is left before the effects of the
      // render that ended the edit have run: they wait for a frame, which never comes here.
      await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await addWidget('text', 'Saved at once', { fields: { Text: 'kept' } });
      await page.evaluate('window.requestAnimationFrame = () => 0');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
      await region('Saved at once').waitFor();
      assert.equal(questions().length, 3, 'work just saved is left without a question');
      // These questions were asked for; the last test counts only ones nobody expected.
      dialogs.splice(asked);
    });

    it('when a time series of things with long names is drawn at the default size then its whole legend shows inside the widget, on a wide screen, on a phone and full screen', async () => {
      const machines = [];
      // Each machine's reading five seconds after the one before: at the latest point only the last has one.
      const first = Date.now() - 15_000;
      for (const n of [1, 2, 3]) {
        const machine = await createThing(api, token, { name: `Simulated machine ${n}` });
        const timestamp = first + n * 5000;
        assert.equal(
          (await device.event({ thing_key: machine.thing_key, timestamp, data: { temperature: 60 + n } })).status,
          200,
        );
        machines.push(machine.thing_key);
      }
      const source = { thing_keys: machines };
      const created = await api.request('POST', '/api/v3/dashboards', {
        token,
        body: {
          dashboard: {
            name: 'Machines',
            widgets: [
              // The size a new widget takes, and a shorter one whose legend cannot fit beside a chart.
              {
                type: 'timeseries',
                title: 'Machine temperatures',
                source,
                metrics: ['temperature'],
                layout: { x: 0, y: 0, w: 6, h: 4 },
              },
              {
                type: 'timeseries',
                title: 'Small chart',
                source,
                metrics: ['temperature'],
                layout: { x: 6, y: 0, w: 6, h: 3 },
              },
            ],
          },
        },
      });
      assert.equal(created.status, 200, created.text);
      const key = created.body.dashboard.dashboard_key;

      /**
       * What of a widget's legend lies outside the widget, and whether the widget itself scrolls. Written
       * as text: functions tsx compiles carry helpers (`__name`) the page lacks.
       */
      const legendOf = (
        title: string,
      ): Promise<{
        labels: string[];
        legendOutside: boolean;
        cellsOutside: string[];
        legendScrolls: boolean;
        legendFocusable: boolean;
        widgetScrolls: boolean;
      }> =>
        page.evaluate(`(() => {
          const widget = [...document.querySelectorAll('section.widget')].find(
            (section) => section.querySelector('h2')?.textContent === ${JSON.stringify(title)},
          );
          const box = widget.getBoundingClientRect();
          const legend = widget.querySelector('.u-legend');
          const outside = (element) => {
            const r = element.getBoundingClientRect();
            return r.top < box.top || r.left < box.left || r.right > box.right + 0.5 || r.bottom > box.bottom + 0.5;
          };
          const cells = [...widget.querySelectorAll('.u-legend th, .u-legend td')];
          return {
            labels: [...widget.querySelectorAll('.u-legend .u-label')].map((l) => l.textContent),
            legendOutside: legend ? outside(legend) : true,
            cellsOutside: cells.filter(outside).map((c) => c.textContent),
            legendScrolls: legend ? legend.scrollHeight > legend.clientHeight + 1 : false,
            legendFocusable: legend?.tabIndex === 0,
            widgetScrolls: widget.scrollHeight > widget.clientHeight + 1 || widget.scrollWidth > widget.clientWidth + 1,
          };
        })()`);
      const labels = ['Time', ...[1, 2, 3].map((n) => `Simulated machine ${n} temperature`)];
      /** Waits for the charts to settle (a chart is made again once its legend is measured), then checks them. */
      const assertLegendsFit = async (where: string) => {
        let last: Awaited<ReturnType<typeof legendOf>> | undefined;
        let small: Awaited<ReturnType<typeof legendOf>> | undefined;
        for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(100)) {
          last = await legendOf('Machine temperatures');
          small = await legendOf('Small chart');
          const settled = last.cellsOutside.length === 0 && !last.legendScrolls && !last.widgetScrolls;
          if (settled && !small.legendOutside && !small.widgetScrolls) break;
        }
        assert.deepEqual(last?.labels, labels, where);
        assert.deepEqual(last?.cellsOutside, [], `${where}: every line of the legend inside the widget`);
        assert.equal(last?.legendScrolls, false, `${where}: the whole legend shown`);
        assert.equal(last?.widgetScrolls, false, `${where}: the widget holds its chart and legend`);
        assert.equal(small?.legendOutside, false, `${where}: the small widget's legend inside it`);
        assert.equal(small?.widgetScrolls, false, `${where}: the small widget holds its chart and legend`);
        assert.ok(
          !small?.legendScrolls || small.legendFocusable,
          `${where}: a legend that scrolls is reached by keyboard`,
        );
      };

      await page.goto(`${api.url}/console/dashboards/${key}`);
      await page.getByRole('heading', { level: 1, name: 'Machines', exact: true }).waitFor();
      await region('Machine temperatures').locator('canvas').first().waitFor();
      await region('Small chart').locator('canvas').first().waitFor();
      await assertLegendsFit('1280 px wide');
      // Away from the cursor each line gives its own latest value, not a blank where the latest point lacks it.
      await page.mouse.move(0, 0);
      const values = region('Machine temperatures').locator('.u-legend .u-series .u-value');
      for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(100)) {
        if ((await values.allTextContents()).slice(1).join(',') === '61,62,63') break;
      }
      assert.deepEqual((await values.allTextContents()).slice(1), ['61', '62', '63']);
      await assertAccessible(page, 'time series with long legends');
      await shot('legend-desk');
      await page.setViewportSize({ width: 375, height: 812 });
      try {
        await assertLegendsFit('375 px wide');
        await shot('legend-phone');
        await page.getByRole('link', { name: 'Full screen', exact: true }).click();
        await page.getByRole('link', { name: 'Leave full screen', exact: true }).waitFor();
        await region('Machine temperatures').locator('canvas').first().waitFor();
        await assertLegendsFit('375 px wide, full screen');
        await shot('legend-phone-full-screen');
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });

    it('when a time series is made as short as the grid allows then it still draws a plot with its y axis labelled', async () => {
      const listed = await api.request('GET', '/api/v3/dashboards', { token, query: { per: 100 } });
      const machines = (listed.body.dashboards as { name: string; dashboard_key: string }[]).find(
        (d) => d.name === 'Machines',
      );
      assert.ok(machines, listed.text);
      await page.goto(`${api.url}/console/dashboards/${machines.dashboard_key}`);
      await page.getByRole('heading', { level: 1, name: 'Machines', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      // Shorter, then Shift with the up arrow, as far as they go.
      const small = region('Small chart');
      for (let i = 0; i < 3; i++) await small.getByRole('button', { name: 'Shorter', exact: true }).click();
      await small.focus();
      for (let i = 0; i < 3; i++) await page.keyboard.press('Shift+ArrowUp');
      assert.equal(await small.locator('.layout-controls .hint').textContent(), 'Column 7, row 1, 6 wide, 3 high');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      assert.equal((await stored(machines.dashboard_key)).widgets[1].layout.h, 3);
      await small.locator('canvas').first().waitFor();
      // The chart is resized once its legend is measured: waited for.
      let drawn = await drawnChart(page, 'Small chart');
      for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(100)) {
        drawn = await drawnChart(page, 'Small chart');
        if (drawn.yLabels >= 2 && drawn.legendInside && !drawn.widgetScrolls) break;
      }
      await shot('smallest-timeseries');
      assert.ok(drawn.yLabels >= 2, `the y axis shows ${drawn.yLabels} labels (a plot ${drawn.plot} px high)`);
      assert.equal(drawn.legendInside, true, 'the legend lies inside the widget');
      assert.equal(drawn.widgetScrolls, false, 'the widget holds its chart and legend without scrolling');
      const legend = small.locator('.u-legend');
      assert.ok(
        !drawn.legendScrolls || (await legend.getAttribute('tabindex')) === '0',
        'a legend that scrolls is reached by keyboard',
      );
    });

    it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
      assert.deepEqual(problems, []);
      assert.deepEqual(dialogs, []);
    });
  });
}
