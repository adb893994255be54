/**
 * The console's charts as a dashboard and a thing's page draw them (docs/console.md, "Pages" and
 * "Dashboards"), a behaviour a test, on a dashboard of a boiler whose template gives its metrics units.
 * Screenshots go to test-results/console/ (charts-*.png). Drawing does not depend on the store: SQLite
 * only.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, drawnChart, launchBrowser, SCREENSHOTS, screenshot, signedInTab } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, postCreated } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { until } from './until.ts';

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

/** A y scale as a chart says it drew it (components/chart.tsx's data-scales). */
type DrawnScale = { metrics: string[]; axis: string; label?: string; min: number; max: number };

describe('charts in a browser', { skip: browserSkip || store.skip }, () => {
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[][] = [];
  let dashboardKey: string;
  let boilerKey: string;
  let adminToken: string;
  const shot = (name: string) => screenshot(page, `charts-${name}`);
  const region = (name: string) => page.getByRole('region', { name, exact: true });

  before(async () => {
    [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    const token = await api.adminToken();
    adminToken = token;
    const { thing_template: template } = await postCreated(api, token, '/api/v3/thing_templates', {
      thing_template: {
        name: 'Boilers',
        metrics: [
          { name: 'temperature', data_type: 'number', unit: '°C' },
          { name: 'pressure', data_type: 'number', unit: 'bar' },
        ],
      },
    });
    const device = new Device(api.url, await createKeyPair(api, token));
    const boiler = await createThing(api, token, {
      name: 'Boiler',
      thing_template_key: template.thing_template_key,
    });
    boilerKey = boiler.thing_key;
    const pump = await createThing(api, token, { name: 'Circulation pump of the primary circuit' });
    // A reading a minute for five minutes, the last one a minute ago, its pressure with float noise.
    const now = Date.now();
    for (let i = 5; i >= 1; i--) {
      const data = { temperature: 20 + i / 10, pressure: i === 1 ? 1.5999999999999999 : 1.5 + i / 100 };
      const sent = await device.event({ thing_key: boiler.thing_key, timestamp: now - i * 60_000, data });
      assert.equal(sent.status, 200, sent.text);
    }
    // The pump last sent two days ago: its date, not only its time, is to keep to one line.
    const pumped = await device.event({
      thing_key: pump.thing_key,
      timestamp: now - 2 * 86_400_000,
      data: { speed: 1450 },
    });
    assert.equal(pumped.status, 200, pumped.text);
    const source = { thing_keys: [boiler.thing_key] };
    const metrics = ['temperature', 'pressure'];
    const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
      dashboard: {
        name: 'Boiler room',
        time_range: { last: '15m' },
        widgets: [
          { type: 'timeseries', title: 'Boiler', source, metrics, layout: { x: 0, y: 0, w: 6, h: 4 } },
          {
            type: 'things',
            title: 'Machines',
            source: { thing_keys: [boiler.thing_key, pump.thing_key] },
            metrics: ['temperature', 'speed'],
            layout: { x: 6, y: 0, w: 6, h: 4 },
          },
          // Shorter than the editor lets a time series be, as the API and an import allow.
          { type: 'timeseries', title: 'Two rows', source, metrics, layout: { x: 0, y: 4, w: 6, h: 2 } },
          { type: 'timeseries', title: 'One row', source, metrics, layout: { x: 6, y: 4, w: 6, h: 1 } },
        ],
      },
    });
    dashboardKey = dashboard.dashboard_key;
    page = await signedInTab(
      browser,
      `${api.url}/console/dashboards/${dashboardKey}`,
      { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      problems,
    );
    await page.getByRole('heading', { level: 1, name: 'Boiler room', exact: true }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  /** The y scales the chart in `widget` says it drew, once it has drawn some. */
  async function scalesIn(widget: string): Promise<DrawnScale[]> {
    const chart = region(widget).locator('.chart');
    await chart.locator('canvas').first().waitFor();
    return until(
      async () => JSON.parse((await chart.getAttribute('data-scales')) ?? '[]') as DrawnScale[],
      (scales) => scales.length > 0,
      `${widget}'s scales`,
    );
  }

  /**
   * Whether the time series titled `title` scrolls, whether its chart lies inside it, and the chart's and
   * legend's heights. Written as text: functions tsx compiles carry helpers (`__name`) the page lacks.
   */
  function shortWidget(
    title: string,
  ): Promise<{ scrolls: boolean; canvasInside: boolean; canvas: number; legend: number }> {
    return page.evaluate(`(() => {
      const section = [...document.querySelectorAll('section.widget')].find(
        (widget) => widget.querySelector('h2')?.textContent === ${JSON.stringify(title)},
      );
      const box = section.getBoundingClientRect();
      const canvas = section.querySelector('.u-wrap canvas')?.getBoundingClientRect();
      return {
        scrolls: section.scrollHeight > section.clientHeight + 1,
        canvasInside: !!canvas && canvas.top >= box.top && canvas.bottom <= box.bottom + 0.5,
        canvas: canvas?.height ?? 0,
        legend: section.querySelector('.u-legend')?.offsetHeight ?? 0,
      };
    })()`);
  }

  /** The time axis' span (epoch seconds) the chart of `chart` says it drew. */
  async function xSpan(chart: ReturnType<Page['locator']>): Promise<{ min: number; max: number }> {
    const span = JSON.parse((await chart.getAttribute('data-x')) ?? '{}') as { min?: number; max?: number };
    return { min: span.min ?? Number.NaN, max: span.max ?? Number.NaN };
  }

  /** The time axis' end (epoch seconds) the chart of `chart` says it drew. */
  const xEnd = async (chart: ReturnType<Page['locator']>): Promise<number> => (await xSpan(chart)).max;

  /** Drags the mouse across the middle of the plot of `chart`, from 30% to 70% of its width. */
  async function dragAcross(tab: Page, chart: ReturnType<Page['locator']>) {
    const box = await chart.locator('.u-over').boundingBox();
    assert.ok(box, 'the plot is drawn');
    const y = box.y + box.height / 2;
    await tab.mouse.move(box.x + box.width * 0.3, y);
    await tab.mouse.down();
    await tab.mouse.move(box.x + box.width * 0.5, y, { steps: 5 });
    await tab.mouse.move(box.x + box.width * 0.7, y, { steps: 5 });
    await tab.mouse.up();
    return { box, y };
  }

  /**
   * Marks the canvas of `chart`, so that `stillMarked` tells whether the chart is still the one it was: a
   * dashboard's rolling range is read again every minute, which draws its time series anew.
   */
  const mark = (chart: ReturnType<Page['locator']>) =>
    chart
      .locator('canvas')
      .first()
      .evaluate((canvas) => {
        canvas.dataset.marked = 'yes';
      });
  const stillMarked = async (chart: ReturnType<Page['locator']>) =>
    (await chart.locator('canvas[data-marked]').count()) > 0;

  /**
   * Waits for the time axis of `chart` to move on by itself: with no event coming, only the chart's own
   * timer moves it, unless the chart is drawn anew meanwhile, in which case it watches the new one (the
   * next is a minute away).
   */
  async function assertSlides(chart: ReturnType<Page['locator']>, what: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      await chart.locator('canvas').first().waitFor();
      await mark(chart);
      const first = await until(
        () => xEnd(chart),
        (end) => Number.isFinite(end),
        `${what}: the time axis drawn`,
      );
      const later = await until(
        () => xEnd(chart),
        (end) => end > first + 3,
        `${what}: the time axis moved on`,
        15_000,
      );
      if (await stillMarked(chart)) {
        assert.ok(later - first < 30, `${what}: moved by ${later - first} s`);
        return;
      }
      assert.ok(attempt < 2, `${what}: the chart was drawn anew twice while watched`);
    }
  }

  it('when a time series draws metrics of two units then each has a y axis of its own, labelled with its unit', async () => {
    const scales = await until(
      () => scalesIn('Boiler'),
      (drawn) => drawn.length === 2,
      'a scale for each unit',
    );
    assert.deepEqual(
      scales.map((scale) => [scale.metrics, scale.axis, scale.label]),
      [
        [['Boiler temperature'], 'left', '°C'],
        [['Boiler pressure'], 'right', 'bar'],
      ],
    );
    const [temperature, pressure] = scales;
    assert.ok(temperature && temperature.min >= 10 && temperature.max <= 30, JSON.stringify(temperature));
    assert.ok(pressure && pressure.min >= 0 && pressure.max <= 3, `pressure is not flat: ${JSON.stringify(pressure)}`);
    await shot('units');
    await assertAccessible(page, 'a time series of two units');
  });

  it('when a chart spans minutes then its time axis writes times as the legend does, with the day under the first', async () => {
    const chart = region('Boiler').locator('[data-x]');
    const marks = await until(
      async () => (JSON.parse((await chart.getAttribute('data-x')) ?? '{}') as { marks?: string[] }).marks ?? [],
      (drawn) => drawn.length >= 2,
      'the time axis marked',
    );
    // `5:20 PM` (the browser's language, en-US here), not uPlot's own `5:20pm` over `12/3/26`.
    const [first, ...rest] = marks;
    assert.match(first ?? '', /^\d{1,2}:\d{2}\s[AP]M\n[A-Z][a-z]{2} \d{1,2}$/, JSON.stringify(marks));
    for (const mark of rest)
      assert.match(mark, /^\d{1,2}:\d{2}\s[AP]M(\n[A-Z][a-z]{2} \d{1,2})?$/, JSON.stringify(marks));
  });

  it('when a value carries float noise then the legend shows it readably, with its unit', async () => {
    await page.mouse.move(0, 0);
    const values = region('Boiler').locator('.u-legend .u-series .u-value');
    const shown = await until(
      async () => (await values.allTextContents()).slice(1),
      (texts) => texts.length === 2 && texts[1] !== '',
      'the legend',
    );
    assert.deepEqual(shown, ['20.1 °C', '1.6 bar']);
    await shot('legend');
  });

  it('when a live range sees no event then its time axis still slides with the clock', async () => {
    await assertSlides(region('Boiler').locator('.chart'), 'the dashboard');
    // The thing's own page, at its last 5 minutes, slides as well.
    await page.goto(`${api.url}/console/things/${boilerKey}`);
    const telemetry = region('Telemetry');
    await telemetry.getByLabel('Range', { exact: true }).selectOption('Last 5 minutes');
    await telemetry.getByText(/^4 points/).waitFor();
    await assertSlides(telemetry.locator('.chart'), "the thing's page");
    await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
    await page.getByRole('heading', { level: 1, name: 'Boiler room', exact: true }).waitFor();
  });

  it('when the user drag-zooms into a live chart then the zoom stays as the clock moves on, until a double-click', async () => {
    const chart = region('Boiler').locator('.chart');
    const plot = chart.locator('.u-over');
    await plot.waitFor();
    const whole = await until(
      () => xSpan(chart),
      (span) => Number.isFinite(span.min),
      'the time axis drawn',
    );
    // The dashboard reads its rolling range again every minute and draws its charts anew: a drag that
    // such a drawing cut short is made again on the new chart.
    let dragged: Awaited<ReturnType<typeof dragAcross>> | undefined;
    let zoomed: Awaited<ReturnType<typeof xSpan>> | undefined;
    for (let attempt = 0; zoomed === undefined; attempt++) {
      await mark(chart);
      dragged = await dragAcross(page, chart);
      const redrawn = !(await stillMarked(chart));
      const span = await until(
        () => xSpan(chart),
        (s) => s.max - s.min < (whole.max - whole.min) * 0.6 || (redrawn && attempt < 2),
        'the zoomed range',
      );
      if (span.max - span.min < (whole.max - whole.min) * 0.6) zoomed = span;
    }
    const { box, y } = dragged as NonNullable<typeof dragged>;
    await page.mouse.move(0, 0);
    // Past one step of the live range's slide (5 seconds for its 15 minutes).
    await new Promise((done) => setTimeout(done, 6500));
    assert.deepEqual(await xSpan(chart), zoomed, 'the zoom is kept');
    await shot('zoomed');
    // A double-click gives back the live range, which slides again.
    await page.mouse.dblclick(box.x + box.width / 2, y);
    const live = await until(
      () => xSpan(chart),
      (span) => Math.abs(span.max - span.min - 900) < 2 && Math.abs(span.max - Date.now() / 1000) < 10,
      'the last 15 minutes again',
    );
    await page.mouse.move(0, 0);
    await until(
      () => xEnd(chart),
      (end) => end > live.max + 3,
      'the time axis moving on again',
      15_000,
    );
  });

  it('when a dashboard reads its rolling range again then a chart the user zoomed into keeps its zoom', async () => {
    // A tab of its own whose clock the test moves on by a minute.
    const tab = await signedInTab(
      browser,
      `${api.url}/console/dashboards/${dashboardKey}`,
      { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      problems,
    );
    try {
      await tab.getByRole('heading', { level: 1, name: 'Boiler room', exact: true }).waitFor();
      await tab.clock.install();
      await tab.reload();
      const chart = tab.getByRole('region', { name: 'Boiler', exact: true }).locator('.chart');
      await chart.locator('.u-over').waitFor();
      await until(
        () => xSpan(chart),
        (span) => Math.abs(span.max - span.min - 900) < 2,
        'the last 15 minutes drawn',
      );
      await dragAcross(tab, chart);
      const zoomed = await until(
        () => xSpan(chart),
        (span) => span.max - span.min < 600,
        'the zoomed range',
      );
      await tab.mouse.move(0, 0);
      await mark(chart);
      await tab.clock.runFor(61_000);
      await until(
        async () => !(await stillMarked(chart)) && (await chart.locator('canvas').count()) > 0,
        (redrawn) => redrawn,
        'the chart drawn anew for the range read again',
      );
      await until(
        () => xSpan(chart),
        (span) => Number.isFinite(span.max),
        'the new chart drawn',
      );
      assert.deepEqual(await xSpan(chart), zoomed, 'the zoom is kept');
    } finally {
      await tab.context().close();
    }
  });

  it('when a time series is one or two rows high then it draws its lines within the widget, without scrolling', async () => {
    try {
      for (const title of ['Two rows', 'One row']) {
        const widget = region(title);
        await widget.locator('canvas').first().waitFor();
        const drawn = await until(
          () => shortWidget(title),
          (seen) => !seen.scrolls && seen.canvasInside,
          `${title} drawn within its widget`,
        );
        assert.ok(drawn.canvas >= 12, `${title}: a chart ${drawn.canvas} px high`);
      }
      // Two rows keep a y axis with its labels and a line of legend giving the values.
      const two = await until(
        () => drawnChart(page, 'Two rows'),
        (seen) => seen.yLabels >= 2 && seen.legendInside,
        'Two rows keeps its y labels and legend',
      );
      assert.equal(two.legendScrolls, false, JSON.stringify(two));
      const values = region('Two rows').locator('.u-legend .u-series:not(:first-child) .u-value');
      assert.deepEqual(await values.allTextContents(), ['20.1 °C', '1.6 bar']);
      // One row is the lines alone: no axis or legend takes its little room.
      assert.equal(await region('One row').locator('.u-legend').count(), 0, 'no legend in one row');
    } finally {
      await shot('short');
    }
    await assertAccessible(page, 'short time series');
  });

  it('when a time series is one row high then its chart names its metrics and their latest values', async () => {
    const summary = region('One row').getByRole('img');
    const label = await until(
      async () => ((await summary.count()) === 1 ? await summary.getAttribute('aria-label') : null),
      (text) => !!text,
      "the one row's summary",
    );
    assert.match(label ?? '', /Boiler temperature[^,;]*20\.1 °C/);
    assert.match(label ?? '', /Boiler pressure[^,;]*1\.6 bar/);
    await region('One row').screenshot({ path: join(SCREENSHOTS, 'charts-one-row.png') });
    await assertAccessible(page, 'a time series of one row');
  });

  it('when the time range changes then the time series do not read their templates again', async () => {
    const reads: string[] = [];
    const count = (request: { url(): string }) => {
      if (request.url().includes('/api/v3/thing_templates')) reads.push(request.url());
    };
    const chart = region('Boiler').locator('.chart');
    const range = page.getByLabel('Time range', { exact: true });
    page.on('request', count);
    try {
      for (const [choice, seconds] of [
        ['Last hour', 3600],
        ['Last 15 minutes', 900],
      ] as const) {
        await range.selectOption(choice);
        await until(
          () => xSpan(chart),
          (span) => Math.abs(span.max - span.min - seconds) < 2,
          `${choice} drawn`,
        );
        assert.equal((await scalesIn('Boiler')).length, 2, 'a scale for each unit');
      }
      // Time for a late read to show.
      await new Promise((done) => setTimeout(done, 500));
    } finally {
      page.off('request', count);
    }
    assert.deepEqual(reads, []);
  });

  it('when a dashboard has a fixed range that ended a minute ago then its time series does not slide', async () => {
    const to = Math.floor(Date.now() / 1000) - 60;
    const { dashboard } = await postCreated(api, adminToken, '/api/v3/dashboards', {
      dashboard: {
        name: 'Boiler room earlier',
        time_range: { from: to - 15 * 60, to },
        widgets: [
          {
            type: 'timeseries',
            title: 'Earlier',
            source: { thing_keys: [boilerKey] },
            metrics: ['temperature'],
            layout: { x: 0, y: 0, w: 6, h: 4 },
          },
        ],
      },
    });
    try {
      await page.goto(`${api.url}/console/dashboards/${dashboard.dashboard_key}`);
      const chart = region('Earlier').locator('.chart');
      await chart.locator('canvas').first().waitFor();
      const drawn = await until(
        () => xSpan(chart),
        (span) => Number.isFinite(span.max),
        'the time axis drawn',
      );
      assert.equal(drawn.max, to, 'the axis ends where the range does');
      await mark(chart);
      // Past one step of a slide (5 seconds for 15 minutes).
      await new Promise((done) => setTimeout(done, 6500));
      assert.deepEqual(await xSpan(chart), drawn, 'the axis stays');
      assert.ok(await stillMarked(chart), 'the same chart');
      await shot('fixed');
    } finally {
      await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
      await page.getByRole('heading', { level: 1, name: 'Boiler room', exact: true }).waitFor();
    }
  });

  it("when a things table is half the dashboard's width then each last event's date keeps to one line", async () => {
    await region('Machines').getByRole('cell', { name: '1450', exact: true }).waitFor();
    // The boiler's template gives its temperature a unit; the pump's Default template gives none.
    await region('Machines').getByRole('cell', { name: '20.1 °C', exact: true }).waitFor();
    await shot('things');
    // The lines of text each date cell takes: the rows its text's boxes start on.
    const lines =
      (await page.evaluate(`[...document.querySelectorAll('section.widget-things table tbody tr')].map((row) => {
      const cell = row.querySelectorAll('td')[2];
      const range = document.createRange();
      range.selectNodeContents(cell);
      const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
      return { text: cell.textContent, lines: tops.size };
    })`)) as { text: string; lines: number }[];
    assert.equal(lines.length, 2, 'both things listed');
    for (const row of lines) assert.equal(row.lines, 1, `${row.text} takes ${row.lines} lines`);
    // Today's event by its time alone, the pump's of two days ago with its day; the whole date as its title.
    assert.doesNotMatch(lines[0]?.text ?? '', /\d{4}/, 'no year for today');
    const pumpTime = region('Machines')
      .getByRole('row', { name: /Circulation pump/ })
      .locator('time');
    assert.match((await pumpTime.getAttribute('title')) ?? '', /\d{4}/, 'the whole date as its title');
    const scrolls = await region('Machines').evaluate((section) => section.scrollWidth > section.clientWidth + 1);
    assert.equal(scrolls, false, 'the table fits its widget');
    await assertAccessible(page, 'a things table at half width');
  });

  it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
    assert.deepEqual(problems.flat(), []);
  });
});
