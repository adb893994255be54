/**
 * How the console's controls look where their state or their neighbours ask for care (docs/console.md,
 * "Pages" and "Dashboards"): a field the API refused has a border unlike a valid field's, thicker and
 * in the error's red, not its colour alone; `Connect a device` stands level with the buttons beside it
 * on the Things and Key pairs pages; a time series being edited keeps its caption clear of its
 * legend; a things table at half a dashboard's width breaks its things' names between words, never
 * inside one, and fits the widget's width; and a dashboard legend that scrolls shows that it does.
 * axe-core finds no serious or critical violation on each. A
 * screenshot of each goes to test-results/console/ (appearance-*.png). Layout does not depend on the
 * store: SQLite only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, screenshot, signedInTab } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, postCreated } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { cutWords, drawnLines } from './drawn-text.ts';

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

/** What a control's border looks like: its colour and the widths it is drawn with. */
type Border = { color: string; width: string; shadow: string };

function borderOf(control: Locator): Promise<Border> {
  return control.evaluate((element) => {
    const style = element.ownerDocument.defaultView?.getComputedStyle(element);
    return { color: style?.borderTopColor ?? '', width: style?.borderTopWidth ?? '', shadow: style?.boxShadow ?? '' };
  });
}

/**
 * For each text field, select and text area of the page's main part: the contrast of its border with
 * the background drawn behind it (`inside`) and behind its parent (`around`), as WCAG computes
 * contrast. Written as text: functions tsx compiles carry helpers (`__name`) the page lacks.
 */
const FIELD_BORDER_CONTRASTS = `(() => {
  const channels = (color) => (color.match(/[\\d.]+/g) || []).map(Number);
  const luminance = (color) => {
    const [r, g, b] = channels(color).slice(0, 3).map((c) => {
      const v = c / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [luminance(a), luminance(b)].sort((m, n) => n - m);
    return (x + 0.05) / (y + 0.05);
  };
  const backgroundOf = (element) => {
    for (let at = element; at; at = at.parentElement) {
      const color = getComputedStyle(at).backgroundColor;
      if ((channels(color)[3] ?? 1) > 0) return color;
    }
    return 'rgb(255, 255, 255)';
  };
  const fields = document.querySelectorAll('main input:not([type="checkbox"]):not([type="radio"]), main select, main textarea');
  return [...fields].map((element) => {
    const border = getComputedStyle(element).borderTopColor;
    return {
      name: element.labels?.[0]?.textContent ?? element.id,
      inside: ratio(border, backgroundOf(element)),
      around: ratio(border, backgroundOf(element.parentElement)),
    };
  });
})()`;

/** The vertical centre of a box, in CSS pixels. */
async function middle(target: Locator): Promise<number> {
  const box = await target.boundingBox();
  assert.ok(box, 'it is shown');
  return box.y + box.height / 2;
}

/** Asserts that each of `links` has its vertical centre within 1 px of `button`'s, and its text on the button's baseline. */
async function assertLevel(button: Locator, links: Locator[]): Promise<void> {
  const centre = await middle(button);
  for (const link of links) {
    const name = await link.textContent();
    const at = await middle(link);
    assert.ok(Math.abs(at - centre) <= 1, `${name} is centred at ${at} px, the button beside it at ${centre} px`);
  }
}

const METRICS = ['temperature', 'burner_modulation', 'primary_return_temperature'];
const NAMES = [
  'Boiler of the north plant room',
  'Circulation pump, primary circuit',
  'Heat exchanger HX-204',
  'feedwater_preheater_east',
];

/**
 * A dashboard `Plant room` of four things of a template `Plant` with a few minutes of readings each:
 * a time series of two metrics and a things table with the same two as columns, each half its width,
 * and below them a time series as short as it can be.
 */
async function plantRoom(api: TestServer): Promise<string> {
  const token = await api.adminToken();
  const { thing_template: plant } = await postCreated(api, token, '/api/v3/thing_templates', {
    thing_template: { name: 'Plant', metrics: METRICS.map((name) => ({ name, data_type: 'number' })) },
  });
  const device = new Device(api.url, await createKeyPair(api, token));
  const keys = [];
  const now = Date.now();
  for (const name of NAMES) {
    const thing = await createThing(api, token, { name, thing_template_key: plant.thing_template_key });
    keys.push(thing.thing_key);
    for (let i = 3; i >= 0; i--) {
      const data = Object.fromEntries(METRICS.map((metric, j) => [metric, 40 + i + j]));
      const sent = await device.event({ thing_key: thing.thing_key, timestamp: now - i * 60_000, data });
      assert.equal(sent.status, 200, sent.text);
    }
  }
  const source = { thing_keys: keys };
  const layout = (x: number) => ({ x, y: 0, w: 6, h: 4 });
  const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
    dashboard: {
      name: 'Plant room',
      widgets: [
        { type: 'timeseries', title: 'Temperatures', source, metrics: METRICS.slice(0, 2), layout: layout(0) },
        { type: 'things', title: 'Machines', source, metrics: METRICS.slice(0, 2), layout: layout(6) },
        // As short as the grid lets a time series be: eight lines of legend do not fit, and scroll.
        {
          type: 'timeseries',
          title: 'Small chart',
          source,
          metrics: METRICS.slice(0, 2),
          layout: { x: 0, y: 4, w: 6, h: 3 },
        },
      ],
    },
  });
  return dashboard.dashboard_key;
}

/**
 * What the caption under the chart of the widget titled `title` lies over, of its legend and its
 * canvas (nothing, as it should). Written as text: functions tsx compiles carry helpers the page lacks.
 */
function captionOverlap(page: Page, title: string): Promise<string[]> {
  return page.evaluate(`(() => {
    const widget = [...document.querySelectorAll('section.widget')].find(
      (section) => section.querySelector('h2')?.textContent === ${JSON.stringify(title)},
    );
    const caption = widget?.querySelector('.chart-caption');
    if (!caption) return ['no caption'];
    const c = caption.getBoundingClientRect();
    const meets = (other) => {
      if (!other) return false;
      const o = other.getBoundingClientRect();
      return c.left < o.right && o.left < c.right && c.top < o.bottom && o.top < c.bottom;
    };
    return [
      ...(meets(widget.querySelector('.u-legend')) ? ['the legend'] : []),
      ...(meets(widget.querySelector('.u-wrap')) ? ['the chart'] : []),
    ];
  })()`);
}

describe("the console's details of appearance", { skip: browserSkip || store.skip }, () => {
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[][] = [];
  let dashboardKey: string;
  const shot = (name: string) => screenshot(page, `appearance-${name}`);

  before(async () => {
    [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    page = await signedInTab(
      browser,
      `${api.url}/console/things`,
      { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      problems,
    );
    await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
    dashboardKey = await plantRoom(api);
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  /** The page at `path`, once its heading `heading` shows. */
  async function open(path: string, heading: string): Promise<void> {
    await page.goto(`${api.url}/console/${path}`);
    await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  }

  it("when the API refuses a field then its border is drawn thicker and in the error's red, unlike a valid field's", async () => {
    await open('key-pairs', 'Key pairs');
    await page.getByRole('button', { name: 'New key pair', exact: true }).click();
    const form = page.getByRole('form', { name: 'New key pair', exact: true });
    const name = form.getByLabel('Name', { exact: true });
    const valid = await borderOf(name);
    await name.fill('N'.repeat(201));
    await form.getByRole('button', { name: 'Create', exact: true }).click();
    await page.locator('input[aria-invalid="true"]').waitFor();
    // Moved off the field, so that what is measured is not its focus ring.
    await page.locator('h1').click();
    const invalid = await borderOf(name);
    await shot('invalid-field');
    assert.notEqual(invalid.color, valid.color, "the refused field's border colour is a valid one's");
    assert.equal(invalid.color, 'rgb(179, 38, 30)', "the refused field's border is the error's red");
    // Not its colour alone: the border is drawn twice as thick (a ring of the same red around it).
    assert.match(invalid.shadow, /rgb\(179, 38, 30\) 0px 0px 0px 1px/, `the refused field's ring: ${invalid.shadow}`);
    assert.equal(valid.shadow, 'none', "a valid field's has none");
    await assertAccessible(page, 'a refused field');
  });

  it("when a field is valid then its border stands out 3:1 from the field's inside and from what is around it", async () => {
    await open('things', 'Things');
    await page.getByRole('button', { name: 'New thing', exact: true }).click();
    await page.getByRole('form', { name: 'New thing', exact: true }).waitFor();
    const contrasts = (await page.evaluate(FIELD_BORDER_CONTRASTS)) as {
      name: string;
      inside: number;
      around: number;
    }[];
    assert.ok(contrasts.length >= 3, `the page's fields: ${JSON.stringify(contrasts)}`);
    for (const field of contrasts) {
      assert.ok(field.inside >= 3 && field.around >= 3, `a field's border contrast: ${JSON.stringify(field)}`);
    }
    await shot('valid-fields');
  });

  it("when a list's rows offer actions then every page draws them alike: outlined, and Delete in red", async () => {
    const token = await api.adminToken();
    await postCreated(api, token, '/api/v3/rules', {
      rule: { name: 'Kiln too hot', condition: 'temperature > 100', alert_type: 2, trigger: 'every_event' },
    });
    await postCreated(api, token, '/api/v3/groups', { group: { name: 'Kilns', group_type: 1 } });
    const kiln = new Device(api.url, await createKeyPair(api, token));
    assert.equal((await kiln.register({ thing_key: 'kiln-1', name: 'Kiln 1' })).status, 200);
    assert.equal((await kiln.event({ thing_key: 'kiln-1', data: { temperature: 120 } })).status, 200);
    const looks = new Map<string, string>();
    for (const [path, heading] of [
      ['templates', 'Templates'],
      ['groups', 'Groups'],
      ['rules', 'Rules'],
      ['alerts', 'Alerts'],
      ['key-pairs', 'Key pairs'],
    ] as const) {
      await open(path, heading);
      const buttons = page.locator('main td button');
      await buttons.first().waitFor();
      for (const button of await buttons.all()) {
        const name = (await button.textContent())?.trim() ?? '';
        const look = await button.evaluate((element) => {
          const style = element.ownerDocument.defaultView?.getComputedStyle(element);
          return `${style?.backgroundColor} ${style?.color} ${style?.borderTopColor}`;
        });
        const kind = name === 'Delete' ? 'Delete' : 'other';
        const first = looks.get(kind);
        if (first === undefined) looks.set(kind, look);
        else assert.equal(look, first, `${name} on ${heading} is drawn as the other row actions of its kind`);
      }
      if (path === 'rules' || path === 'alerts') await shot(`${path}-row-actions`);
    }
    assert.notEqual(looks.get('Delete'), looks.get('other'), 'Delete stands apart');
  });

  it('when the audit trail lists changes then each generated key is drawn whole on one line', async () => {
    await open('audit-trail', 'Audit trail');
    await page.locator('main td[data-label="Key"] code').first().waitFor();
    const keys = (await drawnLines(page, 'main table', 'td[data-label="Key"] code')).filter(
      (lines) => lines.join('').length <= 16,
    );
    assert.ok(keys.length >= 5, `the page lists changes: ${keys.length}`);
    for (const lines of keys) assert.equal(lines.length, 1, `the key ${lines.join('')} is drawn ${lines.join(' | ')}`);
    await shot('audit-trail-keys');
  });

  it('when Connect a device stands beside buttons on the Things and Key pairs pages then it is level with them', async () => {
    const token = await api.adminToken();
    await createThing(api, token, { name: 'Boiler' });
    await createKeyPair(api, token);
    await open('things', 'Things');
    const actions = page.locator('main .actions').first();
    await assertLevel(actions.getByRole('button', { name: 'New thing', exact: true }), [
      actions.getByRole('button', { name: 'Import things', exact: true }),
      actions.getByRole('link', { name: 'Connect a device', exact: true }),
    ]);
    await shot('things-actions');
    await open('key-pairs', 'Key pairs');
    await page.getByRole('table', { name: 'Key pairs', exact: true }).waitFor();
    await assertLevel(page.getByRole('button', { name: 'New key pair', exact: true }), [
      page.getByRole('link', { name: 'Connect a device', exact: true }),
    ]);
    await shot('key-pairs-actions');
    await assertAccessible(page, 'the Key pairs page');
  });

  it("when a time series is being edited then its caption lies clear of its chart's legend", async () => {
    await open(`dashboards/${dashboardKey}`, 'Plant room');
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const widget = page.getByRole('region', { name: 'Temperatures', exact: true });
    await widget.getByRole('button', { name: 'Edit widget', exact: true }).waitFor();
    await widget.locator('canvas').first().waitFor();
    // The chart is fitted to its widget once its legend is measured, over a frame or two: waited for.
    let found = await captionOverlap(page, 'Temperatures');
    for (const deadline = Date.now() + 5000; Date.now() < deadline && found.length > 0; await page.waitForTimeout(100))
      found = await captionOverlap(page, 'Temperatures');
    await shot('editing-timeseries');
    assert.deepEqual(found, [], "the caption's box and what it meets");
    await assertAccessible(page, 'a dashboard being edited');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
  });

  it("when a things table is half a dashboard wide then its things' and metrics' names break between words, never inside one", async () => {
    await open(`dashboards/${dashboardKey}`, 'Plant room');
    const table = page.getByRole('table', { name: 'Machines', exact: true });
    for (const name of NAMES) await table.getByRole('link', { name, exact: true }).waitFor();
    await shot('things-widget');
    const names = await drawnLines(page, '.widget-things tbody', 'td:first-child a');
    assert.deepEqual(
      names.map((parts) => parts.join('')),
      NAMES,
      'the table names every thing, whole',
    );
    assert.ok(
      names.some((parts) => parts.length > 1),
      `no name wraps at this width, which tells nothing: ${JSON.stringify(names)}`,
    );
    assert.deepEqual(cutWords(names), [], "things' names cut inside a word");
    const headings = await drawnLines(page, '.widget-things thead', 'th');
    assert.deepEqual(cutWords(headings), [], 'column headings cut inside a word');
    // And the columns fit the widget's width: no heading runs past its edge.
    const widget = await page.getByRole('region', { name: 'Machines', exact: true }).evaluate((element) => ({
      scroll: element.scrollWidth,
      client: element.clientWidth,
    }));
    assert.ok(widget.scroll <= widget.client, `the table is ${widget.scroll} px wide in ${widget.client} px`);
    await assertAccessible(page, 'a things table at half width');
  });

  it('when a legend has more lines than its box then it shows that it scrolls: a shadow at the edge and a scrollbar', async () => {
    await open(`dashboards/${dashboardKey}`, 'Plant room');
    for (const title of ['Temperatures', 'Small chart'])
      await page.getByRole('region', { name: title, exact: true }).locator('canvas').first().waitFor();
    const legend = page.getByRole('region', { name: 'Small chart', exact: true }).locator('.u-legend');
    // The legend is boxed once it is measured, over a frame or two: waited for.
    await page.getByRole('table', { name: 'Legend of Small chart', exact: true }).waitFor();
    const look = (target: Locator) =>
      target.evaluate((element) => {
        const style = element.ownerDocument.defaultView?.getComputedStyle(element);
        return {
          scrolls: element.scrollHeight > element.clientHeight + 1,
          gradients: (style?.backgroundImage.match(/gradient\(/g) ?? []).length,
          scrollbar: style?.scrollbarWidth ?? '',
          thumb: style?.scrollbarColor ?? '',
        };
      });
    const small = await look(legend);
    await shot('legend-scrolls');
    assert.equal(small.scrolls, true, "the small chart's legend scrolls");
    assert.equal(small.gradients, 4, 'a shadow and its cover at each edge');
    assert.equal(small.scrollbar, 'thin', 'a thin scrollbar, drawn');
    assert.match(small.thumb, /^rgb\(140, 153, 173\)/, 'in a colour that stands out');
    await legend.evaluate((element) => {
      element.scrollTop = element.scrollHeight;
    });
    await shot('legend-scrolled');
    await assertAccessible(page, 'a legend that scrolls');
  });

  it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
    assert.deepEqual(problems.flat(), []);
  });
});
