/**
 * The console on a phone, 375 x 740 (docs/console.md, "On a phone"): every section, a thing's page, a
 * dashboard, the sign-in page and each page's main form, with data in each (a template with metrics,
 * a rule with a long condition, things with tags and long keys, an alert, a dashboard of three
 * widgets), fit the viewport's width: the document never scrolls sideways, and no element reaches
 * past the viewport's edges except inside a container that scrolls sideways on purpose. A dashboard
 * stacks its widgets in one column in reading order, each keeping its height, and its layout is not
 * edited there; a time series grows taller instead, to draw a readable chart, its y axis labelled, and
 * its whole legend below it. The header is one line (brand, Live, Menu) at most 60 px tall. The
 * navigation is closed behind a Menu button, the page right under the header; opened, it is no taller
 * than its links, and choosing one closes it and focuses the new page's heading; the e-mail, the
 * organisation and Sign out are in the opened menu, Sign out the next Tab stop after Menu, and it
 * signs out. Scrolled down, the header stays at the top with Menu in view, and what is focused from
 * there (a field, a heading, the heading Skip to content focuses) comes into view below it, not under it. axe-core finds no serious or critical violation at that width. A screenshot of each page
 * goes to test-results/console/ (narrow-*.png). Layout does not depend on the store: SQLite only.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import {
  assertHeaderLine,
  assertHeadingFocused,
  browserSkip,
  drawnChart,
  isFocused,
  launchBrowser,
  SCREENSHOTS,
  screenshot,
  watchProblems,
} from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { postCreated } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const PHONE = { width: 375, height: 740 };

/** Every page visited: path under /console/, its first-level heading. */
const PAGES = [
  ['overview', 'Overview'],
  ['dashboards', 'Dashboards'],
  ['things', 'Things'],
  ['templates', 'Templates'],
  ['groups', 'Groups'],
  ['gateways', 'Gateways'],
  ['alerts', 'Alerts'],
  ['audit-trail', 'Audit trail'],
  ['rules', 'Rules'],
  ['notification-actions', 'Notification actions'],
  ['key-pairs', 'Key pairs'],
  ['api-keys', 'API keys'],
  ['users', 'Users'],
  ['roles', 'Roles'],
  ['organisations', 'Organisations'],
  ['settings', 'Settings'],
  ['connect', 'Connect a device'],
] as const;

/** Each page's main form, opened by its button: path, button, the form's name. */
const FORMS = [
  ['things', 'New thing', 'New thing'],
  ['things', 'Import things', 'Import things'],
  ['templates', 'New template', 'New template'],
  ['groups', 'New group', 'New group'],
  ['gateways', 'New gateway', 'New gateway'],
  ['rules', 'New rule', 'New rule'],
  ['notification-actions', 'New action', 'New action'],
  ['users', 'New user', 'New user'],
  ['roles', 'New role', 'New role'],
  ['api-keys', 'New API key', 'New API key'],
  ['key-pairs', 'New key pair', 'New key pair'],
  ['organisations', 'New organisation', 'New organisation'],
] as const;

const LONG_CONDITION =
  "temperature > 80 and pressure < 1.2 or primary_circuit_flow_rate < 10 and burner_modulation > 95 and thing.user_defined_properties.site == 'North plant room, second floor'";
const LONG_KEY = 'boiler-north-plant-room-second-floor-0123456789abcdef';

/**
 * What reaches past the viewport's width on the page as it is now: the document's scroll width, and
 * each visible element that extends beyond the left or right edge without a container between it and
 * the page that scrolls sideways (overflow-x auto or scroll), or that keeps it out of sight (a table's
 * headings over cards, there for screen readers: a clipped box of 1 px).
 */
async function overflow(page: Page): Promise<{ scrollWidth: number; width: number; outside: string[] }> {
  // A string, not a function: the test runner's transform would name the inner functions with a
  // helper the page does not have.
  return page.evaluate(`(() => {
    const width = window.innerWidth;
    // Inside a box that scrolls sideways, or one kept out of sight for screen readers (1 px, clipped).
    const contained = (element) => {
      for (let up = element.parentElement; up && up !== document.body; up = up.parentElement) {
        const { overflowX } = getComputedStyle(up);
        if (overflowX === 'auto' || overflowX === 'scroll') return true;
        const box = up.getBoundingClientRect();
        if ((overflowX === 'hidden' || overflowX === 'clip') && box.width <= 1 && box.height <= 1) return true;
      }
      return false;
    };
    const name = (element) => {
      const label = element.getAttribute('aria-label') ?? element.textContent?.trim().slice(0, 40) ?? '';
      const classes = typeof element.className === 'string' && element.className ? '.' + element.className.split(' ').join('.') : '';
      return element.tagName.toLowerCase() + classes + ' "' + label + '"';
    };
    const outside = [];
    for (const element of document.body.querySelectorAll('*')) {
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      if (box.left >= -1 && box.right <= width + 1) continue;
      if (getComputedStyle(element).visibility === 'hidden' || contained(element)) continue;
      outside.push(name(element) + ' from ' + Math.round(box.left) + ' to ' + Math.round(box.right) + ' px');
    }
    return { scrollWidth: document.documentElement.scrollWidth, width, outside };
  })()`);
}

async function assertFits(page: Page, what: string): Promise<void> {
  const found = await overflow(page);
  assert.ok(
    found.scrollWidth <= found.width + 1,
    `${what}: the document is ${found.scrollWidth} px wide in a ${found.width} px viewport; outside: ${found.outside.slice(0, 8).join('; ')}`,
  );
  assert.deepEqual(found.outside.slice(0, 8), [], `${what}: elements past the viewport's edge`);
}

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

describe('the console on a phone, 375 px wide', { skip: browserSkip || store.skip }, () => {
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  let problems: string[];
  let token: string;
  let dashboardKey: string;
  /** The dashboard's widgets as stored: title and layout, in the order the API holds them. */
  const WIDGETS = [
    { title: 'Boiler temperature over the last hour', layout: { x: 4, y: 0, w: 8, h: 4 } },
    { title: 'Open alerts of the boilers', layout: { x: 0, y: 4, w: 12, h: 3 } },
    { title: 'Boiler 1 now', layout: { x: 0, y: 0, w: 4, h: 2 } },
  ];
  /** The same, in reading order: by row, then by column. */
  const READING_ORDER = ['Boiler 1 now', 'Boiler temperature over the last hour', 'Open alerts of the boilers'];

  before(async () => {
    [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    token = await api.adminToken();
    const post = (path: string, body: object) => postCreated(api, token, path, body);
    const { thing_template: boiler } = await post('/api/v3/thing_templates', {
      thing_template: {
        name: 'Boiler',
        description: 'Gas boilers of the plant rooms, with their burners and primary circuits',
        heartbeat_interval: 60,
        metrics: [
          { name: 'temperature', data_type: 'number', unit: '°C' },
          { name: 'pressure', data_type: 'number', unit: 'bar' },
          { name: 'primary_circuit_flow_rate', data_type: 'number', unit: 'l/min' },
          { name: 'burner_modulation', data_type: 'number', unit: '%' },
        ],
      },
    });
    const things = [
      { thing_key: 'boiler-1', name: 'Boiler 1', tags: ['hall-a', 'heating', 'night-rounds'] },
      { thing_key: LONG_KEY, name: 'Boiler of the north plant room', tags: ['hall-b', 'heating', 'second-floor'] },
    ];
    for (const thing of things) {
      await post('/api/v3/things', {
        thing: {
          ...thing,
          thing_template_key: boiler.thing_template_key,
          description: 'A gas boiler',
          bi_directional: true,
        },
      });
    }
    const { rule } = await post('/api/v3/rules', {
      rule: {
        name: 'Boiler overheating or losing pressure',
        condition: LONG_CONDITION,
        description: 'Raised on every event that holds it',
        thing_template_key: boiler.thing_template_key,
        trigger: 'every_event',
        alert_type: 2,
        alert_message: 'Boiler {{thing.name}} at {{temperature}} °C and {{pressure}} bar',
      },
    });
    await post('/api/v3/notification_actions', {
      notification_action: {
        type: 'EmailNotificationAction',
        rule_key: rule.rule_key,
        to: 'maintenance-of-the-north-plant-room@example.com',
        subject: 'Boiler overheating or losing pressure',
      },
    });
    await post('/api/v3/groups', {
      group: {
        name: 'Heating',
        description: 'Every boiler',
        group_type: 2,
        thing_expression: "tags contains 'heating' and thing_template_name == 'Boiler'",
      },
    });
    await post('/api/v3/gateway', {
      gateway: {
        name: 'Hall A gateway',
        gateway_type: 'modbus',
        gateway_version: '1.2.0',
        tags: 'hall-a,heating',
        adapters: [{ type: 'modbus-tcp', configuration: '{"host": "10.0.0.5", "port": 502}', enabled: true }],
      },
    });
    const { role } = await post('/api/v3/roles', { role: { name: 'Operator', abilities: [11, 21, 31, 51, 91] } });
    await post('/api/v3/users', {
      user: {
        email: 'amira.haddad.of.the.north.plant@example.com',
        name: 'Amira Haddad',
        password: 'a long enough password',
        role_key: role.role_key,
      },
    });
    await post('/api/v3/api_keys', { api_key: { name: 'Reporting script', role_key: role.role_key } });
    await post('/api/v3/organisations', { organisation: { name: 'Northwind Dairy', is_oem: false } });
    const device = new Device(api.url, await createKeyPair(api, token, { name: 'Plant devices' }));
    const now = Date.now();
    for (const thing of things) {
      const events = Array.from({ length: 20 }, (_, i) => ({
        thing_key: thing.thing_key,
        timestamp: now - (20 - i) * 60_000,
        data: { temperature: 70 + i, pressure: 1.6, primary_circuit_flow_rate: 120, burner_modulation: 40 },
      }));
      assert.equal((await device.event({ events })).status, 200);
    }
    // One event that holds the rule: an alert.
    const hot = { temperature: 91.5, pressure: 1.1, primary_circuit_flow_rate: 120, burner_modulation: 40 };
    assert.equal((await device.event({ thing_key: 'boiler-1', data: hot })).status, 200);
    const { dashboard } = await post('/api/v3/dashboards', {
      dashboard: {
        name: 'Plant room',
        widgets: [
          {
            type: 'timeseries',
            title: WIDGETS[0]?.title,
            source: { thing_keys: ['boiler-1', LONG_KEY] },
            metrics: ['temperature'],
            layout: WIDGETS[0]?.layout,
          },
          {
            type: 'alerts',
            title: WIDGETS[1]?.title,
            source: { thing_template_key: boiler.thing_template_key },
            layout: WIDGETS[1]?.layout,
          },
          {
            type: 'value',
            title: WIDGETS[2]?.title,
            thing_key: 'boiler-1',
            metric: 'temperature',
            unit: '°C',
            layout: WIDGETS[2]?.layout,
          },
        ],
      },
    });
    dashboardKey = dashboard.dashboard_key;
    for (const deadline = Date.now() + 15_000; ; ) {
      const alerts = await api.request('GET', '/api/v3/alerts', { token });
      if (alerts.body.total_count > 0) break;
      assert.ok(Date.now() < deadline, 'the rule raised no alert');
      await new Promise((done) => setTimeout(done, 100));
    }
    page = await (await browser.newContext({ viewport: PHONE })).newPage();
    page.setDefaultTimeout(15_000);
    problems = watchProblems(page);
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  /** Waits for the page's reads and drawing, then checks it fits, is accessible, and saves a picture. */
  async function check(what: string, picture: string): Promise<void> {
    await page.waitForLoadState('networkidle');
    await page.waitForTimeout(200);
    await screenshot(page, `narrow-${picture}`);
    await assertFits(page, what);
    await assertAccessible(page, `${what} at 375 px`);
  }

  /** The page's scroll-padding-top is the header's height as it is now, and half a rem (style.css). */
  async function assertScrollPaddingFollowsHeader(): Promise<void> {
    const header = await page.getByRole('banner').boundingBox();
    assert.ok(header);
    const padding = await page.evaluate<string>('getComputedStyle(document.documentElement).scrollPaddingTop');
    assert.ok(
      Math.abs(Number.parseFloat(padding) - (header.height + 8)) <= 1,
      `scroll-padding-top is ${padding} under a header ${header.height} px tall`,
    );
  }

  it('when the sign-in page is shown on a phone then it fits', async () => {
    await page.goto(`${api.url}/console/`);
    await page.getByLabel('Organisation key', { exact: true }).waitFor();
    await check('the sign-in page', 'sign-in');
    await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
  });

  for (const [path, heading] of PAGES) {
    it(`when ${heading} is shown on a phone then nothing reaches past the screen's edges`, async () => {
      await page.goto(`${api.url}/console/${path}`);
      await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
      if (path === 'notification-actions') await page.getByRole('cell').first().waitFor();
      await check(heading, path);
    });
  }

  it('when a short page is shown on a phone then the navigation is closed behind Menu and the page starts right under the header', async () => {
    await page.goto(`${api.url}/console/groups`);
    await page.getByRole('heading', { level: 1, name: 'Groups', exact: true }).waitFor();
    const menu = page.getByRole('button', { name: 'Menu', exact: true });
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    const controlled = await menu.getAttribute('aria-controls');
    assert.equal(
      await page.locator(`[id="${controlled}"]`).getAttribute('aria-label'),
      'Main',
      'Menu controls the navigation',
    );
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).isVisible(), false, 'the navigation is closed');
    const header = await page.getByRole('banner').boundingBox();
    const main = await page.getByRole('main').boundingBox();
    assert.ok(header && main);
    const gap = main.y - (header.y + header.height);
    assert.ok(Math.abs(gap) <= 1, `the page starts ${gap} px below the header`);
  });

  it("when Menu is pressed on a phone then the links show, no taller than they are, and choosing one closes it and focuses the new page's heading", async () => {
    const menu = page.getByRole('button', { name: 'Menu', exact: true });
    await menu.click();
    assert.equal(await menu.getAttribute('aria-expanded'), 'true');
    const navigation = page.getByRole('navigation', { name: 'Main' });
    const last = navigation.getByRole('link', { name: 'Settings', exact: true });
    await last.waitFor();
    await check('the open navigation', 'navigation-open');
    const nav = await navigation.boundingBox();
    const lastLink = await last.boundingBox();
    const main = await page.getByRole('main').boundingBox();
    assert.ok(nav && lastLink && main);
    const band = nav.y + nav.height - (lastLink.y + lastLink.height);
    assert.ok(band <= 16, `the navigation reaches ${band} px below its last link`);
    assert.ok(Math.abs(main.y - (nav.y + nav.height)) <= 1, 'the page starts right under the navigation');
    await navigation.getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Users', exact: true }).waitFor();
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    assert.equal(await navigation.isVisible(), false, 'the navigation is closed again');
    await assertHeadingFocused(page, 'Users');
  });

  it('when Menu is used from the keyboard on a phone then Sign out and the links are the next Tab stops, and Escape closes it and returns to Menu', async () => {
    await page.goto(`${api.url}/console/groups`);
    await page.getByRole('heading', { level: 1, name: 'Groups', exact: true }).waitFor();
    const menu = page.getByRole('button', { name: 'Menu', exact: true });
    const signOut = page.getByRole('button', { name: 'Sign out', exact: true });
    const first = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview', exact: true });
    for (const [target, what, tabs] of [
      [signOut, 'Sign out', 1],
      [first, 'Overview', 2],
    ] as const) {
      await menu.focus();
      await page.keyboard.press('Enter');
      assert.equal(await menu.getAttribute('aria-expanded'), 'true');
      for (let i = 0; i < tabs; i++) await page.keyboard.press('Tab');
      assert.equal(await isFocused(target), true, `${what} is Tab stop ${tabs} after Menu`);
      await page.keyboard.press('Escape');
      assert.equal(await menu.getAttribute('aria-expanded'), 'false', `Escape on ${what} closes the menu`);
      assert.equal(await isFocused(menu), true, `the focus is back on Menu from ${what}`);
    }
  });

  it('when a page is shown on a phone then the header is one line of brand, Live and Menu, at most 60 px tall, and the page scrolls to below it', async () => {
    await page.goto(`${api.url}/console/things`);
    await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
    const banner = page.getByRole('banner');
    const live = banner.getByRole('status').filter({ hasText: 'Live' });
    await live.waitFor();
    await screenshot(page, 'narrow-header');
    const header = await banner.boundingBox();
    assert.ok(header);
    assert.ok(header.height <= 60, `the header is ${header.height} px tall`);
    await assertHeaderLine(banner, live);
    const session = await page.evaluate<{ email: string }>('JSON.parse(sessionStorage.getItem("thingbase.session"))');
    assert.equal(await page.getByRole('button', { name: 'Sign out', exact: true }).isVisible(), false);
    assert.equal(await banner.getByText(session.email).isVisible(), false, 'the e-mail waits in the menu');
    await assertScrollPaddingFollowsHeader();
  });

  it("when a thing's page is shown on a phone then it fits, its chart included", async () => {
    await page.goto(`${api.url}/console/things/${LONG_KEY}`);
    await page.getByRole('heading', { level: 1, name: 'Boiler of the north plant room', exact: true }).waitFor();
    await page.getByRole('region', { name: 'Telemetry', exact: true }).locator('canvas').first().waitFor();
    await check("a thing's page", 'thing');
  });

  for (const [path, button, form] of FORMS) {
    it(`when ${button} is open on /console/${path} on a phone then the form fits`, async () => {
      await page.goto(`${api.url}/console/${path}`);
      await page.getByRole('button', { name: button, exact: true }).first().click();
      await page.getByRole('form', { name: form, exact: true }).waitFor();
      await check(`the ${button} form`, `form-${path}-${button.toLowerCase().replaceAll(' ', '-')}`);
    });
  }

  it("when New role is open on a phone then the abilities' grid shows every column without scrolling", async () => {
    await page.goto(`${api.url}/console/roles`);
    await page.getByRole('button', { name: 'New role', exact: true }).click();
    const form = page.getByRole('form', { name: 'New role', exact: true });
    const grid = form.getByRole('region', { name: 'Abilities by class', exact: true });
    const widths = await grid.evaluate((box) => ({ scroll: box.scrollWidth, client: box.clientWidth }));
    assert.ok(widths.scroll <= widths.client + 1, `the grid is ${widths.scroll} px wide in a box of ${widths.client}`);
    // The last column's checkbox of the longest class is in sight, and can be ticked where it is.
    const last = form.getByRole('checkbox', { name: 'notification_action delete', exact: true });
    const box = await last.boundingBox();
    const viewport = page.viewportSize();
    assert.ok(box && viewport && box.x + box.width <= viewport.width, 'the checkbox is inside the viewport');
    await last.check();
    assert.equal(await last.isChecked(), true);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
  });

  it('when a dashboard is shown on a phone then its widgets stack in one column in reading order, each keeping its height or, a time series, at least it', async () => {
    await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
    await page.getByRole('heading', { level: 1, name: 'Plant room', exact: true }).waitFor();
    await page.getByRole('region', { name: WIDGETS[0]?.title, exact: true }).locator('canvas').first().waitFor();
    await check('a dashboard', 'dashboard');
    const boxes = await Promise.all(
      READING_ORDER.map(async (title) => {
        const box = await page.getByRole('region', { name: title, exact: true }).boundingBox();
        assert.ok(box, title);
        return { title, ...box };
      }),
    );
    const grid = await page.locator('.dashboard-grid').boundingBox();
    assert.ok(grid);
    const rem = await page.evaluate<number>('Number.parseFloat(getComputedStyle(document.documentElement).fontSize)');
    for (const box of boxes) {
      assert.ok(Math.abs(box.x - grid.x) <= 1 && Math.abs(box.width - grid.width) <= 1, `${box.title} spans the grid`);
      const { h } = WIDGETS.find((w) => w.title === box.title)?.layout ?? { h: 0 };
      // h rows of 4rem and the gaps of 0.75rem between them; a time series taller when its chart and legend need it.
      const height = h * 4 * rem + (h - 1) * 0.75 * rem;
      if (box.title === WIDGETS[0]?.title)
        assert.ok(box.height >= height - 1, `${box.title}: ${box.height} px high, less than ${height}`);
      else assert.ok(Math.abs(box.height - height) <= 1, `${box.title}: ${box.height} px high, not ${height}`);
    }
    const tops = boxes.map((b) => b.y);
    assert.deepEqual(
      tops,
      [...tops].sort((a, b) => a - b),
      'top to bottom in reading order',
    );
    for (let i = 1; i < boxes.length; i++) {
      const before = boxes[i - 1];
      assert.ok(before && (boxes[i]?.y ?? 0) >= before.y + before.height, 'one below the other');
    }
  });

  it('when a dashboard is shown on a phone then its time series has a plot tall enough to read, its y axis labelled, and its whole legend below the chart', async () => {
    const widget = page.getByRole('region', { name: WIDGETS[0]?.title, exact: true });
    await widget.locator('canvas').first().waitFor();
    const measure = () => drawnChart(page, WIDGETS[0]?.title ?? '');
    // The chart is resized once its legend is measured: waited for.
    let drawn = await measure();
    for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(100)) {
      drawn = await measure();
      if (drawn.plot >= 160 && drawn.yLabels >= 2 && drawn.legendInside && !drawn.widgetScrolls) break;
    }
    await screenshot(page, 'narrow-dashboard-timeseries');
    assert.ok(drawn.plot >= 160, `the plotting box is ${drawn.plot} px high (the canvas ${drawn.canvas} px)`);
    assert.ok(drawn.yLabels >= 2, `the y axis shows ${drawn.yLabels} labels`);
    assert.ok(drawn.legendBelow >= -1, `the legend starts ${drawn.legendBelow} px below the chart`);
    assert.equal(drawn.legendInside, true, 'the legend lies inside the widget');
    assert.equal(drawn.legendScrolls, false, 'the whole legend is shown');
    assert.equal(drawn.widgetScrolls, false, 'the widget holds its chart and legend without scrolling');
  });

  it('when a dashboard is edited on a phone then its layout is not offered, a note says where it is edited, and the arrow keys leave it', async () => {
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByText('The layout is edited on a wider screen', { exact: false }).waitFor();
    for (const { title } of WIDGETS) {
      assert.equal(await page.getByRole('group', { name: `Layout of ${title}`, exact: true }).isVisible(), false);
    }
    await check('a dashboard being edited', 'dashboard-editing');
    const widget = page.getByRole('region', { name: 'Boiler 1 now', exact: true });
    await widget.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Shift+ArrowRight');
    const title = widget.getByRole('heading', { name: 'Boiler 1 now', exact: true });
    const box = await title.boundingBox();
    assert.ok(box);
    await page.mouse.move(box.x + 10, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + 200, box.y + 300, { steps: 5 });
    await page.mouse.up();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
    const stored = await api.request('GET', `/api/v3/dashboards/${dashboardKey}`, { token });
    assert.deepEqual(
      stored.body.dashboard.widgets.map((w: { title: string; layout: object }) => ({
        title: w.title,
        layout: w.layout,
      })),
      WIDGETS,
      'the layout is unchanged',
    );
  });

  it('when the same dashboard is edited on a wide screen then its layout is offered and drawn on twelve columns', async () => {
    await page.setViewportSize({ width: 1280, height: 860 });
    try {
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await page.getByRole('group', { name: 'Layout of Boiler 1 now', exact: true }).waitFor();
      assert.equal(await page.getByText('The layout is edited on a wider screen', { exact: false }).isVisible(), false);
      const value = await page.getByRole('region', { name: 'Boiler 1 now', exact: true }).boundingBox();
      const chart = await page.getByRole('region', { name: WIDGETS[0]?.title, exact: true }).boundingBox();
      assert.ok(value && chart);
      assert.equal(Math.round(value.y), Math.round(chart.y), 'side by side on the first row');
      assert.ok(chart.x > value.x + value.width);
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    } finally {
      await page.setViewportSize(PHONE);
    }
  });

  it("when Dashboards is chosen from a dashboard on a phone then the tab's title and the focus follow the page", async () => {
    await page.goto(`${api.url}/console/dashboards/${dashboardKey}`);
    await page.getByRole('heading', { level: 1, name: 'Plant room', exact: true }).waitFor();
    for (const deadline = Date.now() + 5000; (await page.title()) !== 'Plant room · Thingbase'; ) {
      assert.ok(Date.now() < deadline, `the dashboard's name is not the title: ${await page.title()}`);
      await page.waitForTimeout(50);
    }
    await page.getByRole('button', { name: 'Menu', exact: true }).click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dashboards', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Dashboards', exact: true }).waitFor();
    await assertHeadingFocused(page, 'Dashboards');
    assert.equal(await page.title(), 'Dashboards · Thingbase');
  });

  it('when a long page is scrolled down on a phone then the header stays at the top with Menu in view, and neither the open navigation nor a heading focused from there is under it', async () => {
    await page.goto(`${api.url}/console/things/${LONG_KEY}`);
    const heading = page.getByRole('heading', { level: 1, name: 'Boiler of the north plant room', exact: true });
    await heading.waitFor();
    await page.getByRole('region', { name: 'Telemetry', exact: true }).locator('canvas').first().waitFor();
    await page.waitForLoadState('networkidle');
    await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
    const scrolled = await page.evaluate<number>('window.scrollY');
    assert.ok(scrolled > PHONE.height / 2, `the page scrolled ${scrolled} px only`);
    await page.screenshot({ path: join(SCREENSHOTS, 'narrow-scrolled.png') });
    const header = await page.getByRole('banner').boundingBox();
    const menu = page.getByRole('button', { name: 'Menu', exact: true });
    const button = await menu.boundingBox();
    assert.ok(header && button);
    assert.ok(Math.abs(header.y) <= 1, `the header is at ${header.y} px, not at the top`);
    assert.ok(button.y >= 0 && button.y + button.height <= PHONE.height, `Menu is at ${button.y} px, out of view`);
    const below = header.y + header.height;
    // Opened from there, the navigation shows right under the header.
    await menu.click();
    const first = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview', exact: true });
    const link = await first.boundingBox();
    assert.ok(link);
    assert.ok(
      link.y >= below - 1 && link.y + link.height <= PHONE.height,
      `the open navigation's first link is at ${link.y} px`,
    );
    await page.screenshot({ path: join(SCREENSHOTS, 'narrow-scrolled-navigation-open.png') });
    await page.keyboard.press('Escape');
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    // Scrolled until it is under the header, a heading focused (as a new page's is, app.tsx) or a
    // field reached with Tab is brought into view below the header.
    await heading.evaluate((element) => {
      element.tabIndex = -1;
    });
    const range = page.getByRole('region', { name: 'Telemetry', exact: true }).getByLabel('Range', { exact: true });
    for (const [target, what] of [
      [heading, 'heading'],
      [range, 'range'],
    ] as const) {
      const box = await target.boundingBox();
      assert.ok(box);
      await page.evaluate(`window.scrollBy(0, ${box.y - below / 2})`);
      await target.focus();
      const focused = await target.boundingBox();
      assert.ok(focused);
      assert.ok(
        focused.y >= below - 1 && focused.y + focused.height <= PHONE.height,
        `the focused ${what} is at ${focused.y} px, under the header ending at ${below} px`,
      );
      await page.screenshot({ path: join(SCREENSHOTS, `narrow-scrolled-focused-${what}.png`) });
    }
  });

  it('when Skip to content is used from the keyboard on a long page scrolled down on a phone then its heading takes the focus and shows below the header', async () => {
    const name = 'Boiler of the north plant room';
    await page.goto(`${api.url}/console/things/${LONG_KEY}`);
    const heading = page.getByRole('heading', { level: 1, name, exact: true });
    await heading.waitFor();
    await page.getByRole('region', { name: 'Telemetry', exact: true }).locator('canvas').first().waitFor();
    await page.waitForLoadState('networkidle');
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content', exact: true });
    assert.equal(await isFocused(skip), true, 'the first Tab stop');
    // Read on down the page (a swipe, a screen reader's reading) with the link still focused.
    await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
    const scrolled = await page.evaluate<number>('window.scrollY');
    assert.ok(scrolled > PHONE.height / 2, `the page scrolled ${scrolled} px only`);
    await page.keyboard.press('Enter');
    await assertHeadingFocused(page, name);
    const header = await page.getByRole('banner').boundingBox();
    const box = await heading.boundingBox();
    assert.ok(header && box);
    const below = header.y + header.height;
    assert.ok(
      box.y >= below - 1 && box.y + box.height <= PHONE.height,
      `the focused heading is at ${box.y} px, the header ending at ${below} px`,
    );
    await screenshot(page, 'narrow-skip-link-scrolled');
  });

  it('when Menu is opened on a phone then the e-mail, the organisation and Sign out show in it, and Sign out reached from the keyboard signs out', async () => {
    await page.goto(`${api.url}/console/groups`);
    await page.getByRole('heading', { level: 1, name: 'Groups', exact: true }).waitFor();
    const session = await page.evaluate<{ token: string; email: string; organisationName: string }>(
      'JSON.parse(sessionStorage.getItem("thingbase.session"))',
    );
    const menu = page.getByRole('button', { name: 'Menu', exact: true });
    await menu.focus();
    await page.keyboard.press('Enter');
    await page.getByText(`${session.email} · ${session.organisationName}`, { exact: true }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings', exact: true }).waitFor();
    await check('the open menu', 'menu-open');
    // The header holds the open menu's first line: what scrolls into view stops below that.
    await assertScrollPaddingFollowsHeader();
    // Tab from Menu reaches Sign out before it leaves the menu for the page.
    const signOut = page.getByRole('button', { name: 'Sign out', exact: true });
    for (let tabs = 0; !(await isFocused(signOut)); tabs++) {
      const inPage = await page.getByRole('main').evaluate((main) => main.contains(main.ownerDocument.activeElement));
      assert.ok(!inPage && tabs < 40, `Tab went from Menu to the page, or ${tabs} stops, without reaching Sign out`);
      await page.keyboard.press('Tab');
    }
    const signedOut = page.waitForRequest((r) => r.url().endsWith('/api_sign_out') && r.method() === 'DELETE');
    await page.keyboard.press('Enter');
    await signedOut;
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    const refused = await api.request('GET', '/api/v3/things', { token: session.token });
    assert.equal(refused.status, 401, 'the token is revoked');
  });

  it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
    assert.deepEqual(problems, []);
  });
});
