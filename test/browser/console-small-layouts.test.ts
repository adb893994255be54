/**
 * The console at its smallest sizes (docs/console.md, "Dashboards" and "On a phone"), as users meet
 * them: the smallest dashboard time series (3 rows) whose legend has room for one line shows a series
 * there, its colour and name, not the time; a larger one keeps its legend, the time first, whole. On
 * a thing's page 390 px wide the metrics' names break at their underscores, never inside a word, and
 * the page does not scroll sideways. At 320 px wide a lost realtime connection keeps the header one
 * line, its usual height, saying so in fewer words while screen readers still hear `Connection lost:
 * reconnecting…`. axe-core finds no serious or critical violation on each. A screenshot of each goes
 * to test-results/console/ (small-*.png). Layout does not depend on the store: SQLite only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import {
  assertHeaderLine,
  browserSkip,
  drawnChart,
  launchBrowser,
  routeRealtime,
  screenshot,
  signedInTab,
} from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { postCreated } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { cutWords, drawnLines } from './drawn-text.ts';

/** The viewport signedInTab opens. */
const WIDE = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };
const NARROWEST = { width: 320, height: 640 };

// A name long enough that a series' line of legend does not share its line with the time.
const THING = { thing_key: 'boiler-north', name: 'Boiler of the north plant room' };
// Names longer than their place on a phone: in the latest values, and in the chart's legend.
const METRICS = ['temperature', 'burner_modulation', 'primary_circuit_return_flow_temperature'];
/** The metrics the dashboard's time series draw. */
const CHARTED = METRICS.slice(0, 2);
const SMALL = 'North boiler, small';
const LARGE = 'North boiler, large';

/**
 * The lines of the legend of the widget titled `title` that its box shows whole without scrolling,
 * each by its label (`Time`, or a series' name), with whether it has its colour's marker.
 */
function shownLegendLines(page: Page, title: string): Promise<{ label: string; marker: boolean }[]> {
  return page.evaluate(`(() => {
    const widget = [...document.querySelectorAll('section.widget')].find(
      (section) => section.querySelector('h2')?.textContent === ${JSON.stringify(title)},
    );
    const legend = widget.querySelector('.u-legend');
    const box = legend.getBoundingClientRect();
    const top = box.top + legend.clientTop;
    const bottom = top + legend.clientHeight;
    return [...legend.querySelectorAll('tr')]
      .filter((line) => {
        const r = line.getBoundingClientRect();
        return r.height > 0 && r.top >= top - 0.5 && r.bottom <= bottom + 0.5;
      })
      .map((line) => ({
        label: (line.querySelector('.u-label')?.textContent ?? '').trim(),
        marker: [...line.querySelectorAll('.u-marker')].some((marker) => {
          const style = getComputedStyle(marker);
          return marker.getBoundingClientRect().width > 0 && style.borderTopStyle !== 'none' && style.borderTopWidth !== '0px';
        }),
      }));
  })()`);
}

/**
 * Each line of the legend of a thing's Telemetry chart but the time: its name, whether its colour's
 * marker and its value are level with the name's first line, and whether it lies within the panel.
 */
function telemetryLegend(
  page: Page,
): Promise<{ label: string; markerBeside: boolean; valueBeside: boolean; inside: boolean }[]> {
  return page.evaluate(`(() => {
    const panel = document.querySelector('section[aria-label="Telemetry"]');
    const box = panel.getBoundingClientRect();
    return [...panel.querySelectorAll('.u-legend .u-series')].slice(1).map((line) => {
      const label = line.querySelector('.u-label');
      const range = document.createRange();
      range.setStart(label.firstChild, 0);
      range.setEnd(label.firstChild, 1);
      const first = range.getClientRects()[0];
      const marker = line.querySelector('.u-marker').getBoundingClientRect();
      const value = line.querySelector('.u-value').getBoundingClientRect();
      const name = label.getBoundingClientRect();
      return {
        label: label.textContent,
        markerBeside: marker.top < first.bottom && marker.bottom > first.top,
        valueBeside: value.top < first.bottom && value.bottom > first.top,
        inside: Math.min(marker.left, name.left) >= box.left - 0.5 && Math.max(name.right, value.right) <= box.right + 0.5,
      };
    });
  })()`);
}

/** The page does not scroll sideways: the document is no wider than the viewport. */
async function assertNoSidewaysScroll(page: Page): Promise<void> {
  const widths = await page.evaluate<{ scroll: number; inner: number }>(
    '({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })',
  );
  assert.ok(widths.scroll <= widths.inner, `the page is ${widths.scroll} px wide in a ${widths.inner} px viewport`);
}

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

describe('the console at its smallest sizes', { skip: browserSkip || store.skip }, () => {
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[][] = [];
  let dashboardKey: string;

  before(async () => {
    [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    const token = await api.adminToken();
    const post = (path: string, body: object) => postCreated(api, token, path, body);
    const { thing_template: boiler } = await post('/api/v3/thing_templates', {
      thing_template: {
        name: 'Boiler',
        metrics: METRICS.map((name) => ({ name, data_type: 'number' })),
      },
    });
    await post('/api/v3/things', { thing: { ...THING, thing_template_key: boiler.thing_template_key } });
    const device = new Device(api.url, await createKeyPair(api, token));
    const now = Date.now();
    for (let i = 5; i >= 0; i--) {
      const data = {
        temperature: 60 + i,
        burner_modulation: 40 + i,
        primary_circuit_return_flow_temperature: 48.5 + i,
      };
      const sent = await device.event({ thing_key: THING.thing_key, timestamp: now - i * 60_000, data });
      assert.equal(sent.status, 200, sent.text);
    }
    const source = { thing_keys: [THING.thing_key] };
    const { dashboard } = await post('/api/v3/dashboards', {
      dashboard: {
        name: 'Boiler room',
        widgets: [
          // As short as the grid lets a time series be, and the size a new widget takes.
          { type: 'timeseries', title: SMALL, source, metrics: CHARTED, layout: { x: 0, y: 0, w: 6, h: 3 } },
          { type: 'timeseries', title: LARGE, source, metrics: CHARTED, layout: { x: 6, y: 0, w: 6, h: 4 } },
        ],
      },
    });
    dashboardKey = dashboard.dashboard_key;
    const admin = { email: ADMIN_EMAIL, password: ADMIN_PASSWORD };
    page = await signedInTab(browser, `${api.url}/console/things`, admin, problems);
    await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it("when the smallest time series has room for one line of legend then that line is a series, with its colour and name, and a larger one's legend still starts with the time", async () => {
    await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
    await page.getByRole('heading', { level: 1, name: 'Boiler room', exact: true }).waitFor();
    for (const title of [SMALL, LARGE])
      await page.getByRole('region', { name: title, exact: true }).locator('canvas').first().waitFor();
    const series = CHARTED.map((metric) => `${THING.name} ${metric}`);
    // The charts are resized once their legends are measured: waited for, up to 15 s (a loaded machine
    // running other browser tests beside this one may take several).
    let small = await drawnChart(page, SMALL);
    let shown = await shownLegendLines(page, SMALL);
    let large = await shownLegendLines(page, LARGE);
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await page.waitForTimeout(100)) {
      small = await drawnChart(page, SMALL);
      shown = await shownLegendLines(page, SMALL);
      large = await shownLegendLines(page, LARGE);
      if (small.yLabels >= 2 && !small.widgetScrolls && large.length === series.length + 1) break;
    }
    await screenshot(page, 'small-dashboard-timeseries');
    assert.ok(small.yLabels >= 2, `the small chart's y axis shows ${small.yLabels} labels`);
    assert.equal(small.legendInside, true, "the small chart's legend lies inside the widget");
    assert.equal(small.widgetScrolls, false, 'the small widget holds its chart and legend without scrolling');
    assert.ok(shown.length >= 1, "the small chart's legend shows a line");
    assert.ok(
      shown.every((line) => series.includes(line.label) && line.marker),
      `the small chart's legend shows ${JSON.stringify(shown)}, not a series with its colour`,
    );
    assert.deepEqual(
      large.map((line) => line.label),
      ['Time', ...series],
      "the large chart's legend, whole, the time first",
    );
    await assertAccessible(page, 'the smallest time series');
  });

  it("when a thing's page is shown on a phone then its metrics' names break at their underscores, not inside a word, and the page does not scroll sideways", async () => {
    await page.setViewportSize(PHONE);
    try {
      await page.goto(`${api.url}/console/things/${THING.thing_key}`);
      await page.getByRole('heading', { level: 1, name: THING.name, exact: true }).waitFor();
      const latest = page.getByRole('region', { name: 'Latest values', exact: true });
      await latest.getByText('temperature', { exact: true }).waitFor();
      const telemetry = page.getByRole('region', { name: 'Telemetry', exact: true });
      await telemetry.locator('canvas').first().waitFor();
      await screenshot(page, 'small-thing-phone');
      const names = await drawnLines(page, 'section[aria-labelledby="latest-values"]', 'dt');
      assert.deepEqual(
        names.map((parts) => parts.join('')),
        [...METRICS].sort(),
        'the latest values name every metric',
      );
      assert.ok(
        names.some((parts) => parts.length > 1),
        `no name wraps at this width: ${JSON.stringify(names)}`,
      );
      assert.deepEqual(cutWords(names), [], 'latest values whose name is cut inside a word');
      const legend = await drawnLines(page, 'section[aria-label="Telemetry"]', '.u-legend .u-label');
      assert.deepEqual(cutWords(legend), [], 'chart legend lines whose name is cut inside a word');
      // Each of the chart's lines keeps its colour and its value beside its name, within the panel.
      const lines = await telemetryLegend(page);
      assert.deepEqual(
        lines.filter((line) => !line.markerBeside || !line.valueBeside || !line.inside),
        [],
        "the chart's legend",
      );
      assert.equal(lines.length, METRICS.length);
      await assertNoSidewaysScroll(page);
      await assertAccessible(page, "a thing's page on a phone");
    } finally {
      await page.setViewportSize(WIDE);
    }
  });

  it('when the realtime connection is lost at 320 px wide then the header stays one line of its usual height and screen readers still hear that the connection was lost', async (t: TestContext) => {
    const route = await routeRealtime(t, page);
    await page.setViewportSize(NARROWEST);
    t.after(() => page.setViewportSize(WIDE));
    await page.goto(`${api.url}/console/things`);
    await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
    const banner = page.getByRole('banner');
    const status = banner.getByRole('status');
    await status.filter({ hasText: 'Live' }).waitFor();
    const usual = await banner.boundingBox();
    assert.ok(usual);
    await screenshot(page, 'small-header-live');
    // Dropped, and refused again each time it is opened, so that it stays lost.
    route.allow = false;
    for (const socket of route.sockets) await socket.close({ code: 1012, reason: 'restarting' });
    await status.filter({ hasText: 'reconnecting' }).waitFor();
    await screenshot(page, 'small-header-reconnecting');
    const header = await banner.boundingBox();
    assert.ok(header);
    assert.ok(
      Math.abs(header.height - usual.height) <= 1,
      `the header is ${header.height} px tall, ${usual.height} px while live`,
    );
    await assertHeaderLine(banner, status);
    // One line of text (the state's box no taller than 1.5 of its lines), and none of it cut off.
    const shown = await page.evaluate<{ height: number; line: number; clipped: boolean }>(`(() => {
      const element = document.querySelector('header [role="status"]');
      const style = getComputedStyle(element);
      return {
        height: element.getBoundingClientRect().height,
        line: Number.parseFloat(style.lineHeight) || Number.parseFloat(style.fontSize) * 1.2,
        clipped: element.scrollWidth > element.clientWidth + 1,
      };
    })()`);
    assert.ok(
      shown.height < shown.line * 1.5,
      `the connection's state takes ${shown.height} px, lines of ${shown.line} px`,
    );
    assert.equal(shown.clipped, false, "the connection's state is cut short");
    assert.match(await status.innerText(), /reconnecting/i, 'what the header shows');
    const heard = await status.ariaSnapshot();
    // The whole text, once: the shorter one shown is hidden from them.
    assert.equal(heard, '- status: "Connection lost: reconnecting…"', 'the status as screen readers have it');
    await assertNoSidewaysScroll(page);
    await assertAccessible(page, 'the header at 320 px, reconnecting');
  });

  it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
    assert.deepEqual(problems.flat(), []);
  });
});
