/**
 * How the console writes numbers and names its rows' buttons (docs/console.md, "Pages"): every number
 * as the API gives it, in any language (`10000 things`, the Overview's figures, a metric's value); the
 * Alerts page's `Acknowledge` and `Clear` keep their names on every row and are described by the row's
 * thing and message, so that a screen reader tells the rows apart. Formatting does not depend on the
 * store: SQLite only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, descriptionOf, launchBrowser, screenshot } from '../support/browser.ts';
import { openConsole } from '../support/console-session.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { postCreated } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const FLEET = 10_000;
const sqlite = STORES.find((store) => store.name === 'sqlite');

describe("the console's numbers and row buttons in a browser [sqlite]", { skip: browserSkip || !sqlite }, () => {
  let api: TestServer;
  let browser: Browser;
  let token: string;
  /** What each page reported (CSP refusals, uncaught errors), looked at by the last test. */
  const problems: string[][] = [];

  before(async () => {
    [api, browser] = await Promise.all([startServer(sqlite as (typeof STORES)[number]), launchBrowser()]);
    token = await api.adminToken();
    const things = Array.from({ length: FLEET - 2 }, (_, i) => ({
      thing_key: `pump-${i}`,
      name: `Pump ${i}`,
      tags: 'fleet',
    }));
    const imported = await api.request('POST', '/api/v3/things/import', { token, body: { things } });
    assert.equal(imported.body.created, FLEET - 2, imported.text);
    await postCreated(api, token, '/api/v3/groups', {
      group: { name: 'Whole fleet', group_type: 2, thing_expression: "tags contains 'fleet'" },
    });
    // Two more things, each with an alert of the same message: only the thing tells the rows apart.
    const device = new Device(api.url, await createKeyPair(api, token));
    await postCreated(api, token, '/api/v3/rules', {
      rule: {
        name: 'Hot',
        condition: 'temperature > 40',
        alert_type: 2,
        alert_message: 'Too hot',
        trigger: 'every_event',
      },
    });
    for (const [thing_key, name] of [
      ['kiln-a', 'Kiln A'],
      ['kiln-b', 'Kiln B'],
    ]) {
      assert.equal((await device.register({ thing_key, name })).status, 200);
      assert.equal((await device.event({ thing_key, data: { temperature: 41.7 } })).status, 200);
    }
    for (const deadline = Date.now() + 15_000; ; ) {
      const listed = await api.request('GET', '/api/v3/alerts', { token, query: { status: ['open'] } });
      if (listed.body.total_count === 2) break;
      assert.ok(Date.now() < deadline, `two open alerts, not ${listed.body.total_count}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it('when 10000 things are listed in en-US or de-DE then the totals and the Overview figure are the API numbers, ungrouped', async () => {
    for (const locale of ['en-US', 'de-DE']) {
      const opened = await openConsole(browser, api.url, 'things', 'Things', undefined, { locale });
      problems.push(opened.problems);
      const { page } = opened;
      await page.getByText('Page 1 of 200 · 10000 things', { exact: true }).waitFor();
      if (locale === 'en-US') {
        await assertAccessible(page, 'Things with 10,000 things');
        await screenshot(page, 'numbers-things-en-US');
      }
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Groups', exact: true }).click();
      const row = page.getByRole('row').filter({ hasText: 'Whole fleet' });
      await row.getByRole('cell', { name: '9998', exact: true }).waitFor();
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview', exact: true }).click();
      await page
        .getByRole('figure', { name: 'Things', exact: true })
        .filter({ hasText: /^10000$/ })
        .waitFor();
      await opened.close();
    }
  });

  it('when two alerts are open then each row keeps Acknowledge and Clear as names, described by its own thing', async () => {
    const opened = await openConsole(browser, api.url, 'alerts', 'Alerts', undefined, { locale: 'en-US' });
    problems.push(opened.problems);
    const { page } = opened;
    await page.getByText('Page 1 of 1 · 2 alerts', { exact: true }).waitFor();
    for (const name of ['Acknowledge', 'Clear']) {
      const buttons = page.getByRole('button', { name, exact: true });
      // The buttons wait for the caller's rights, which may be read after the alerts.
      await buttons.nth(1).waitFor();
      assert.equal(await buttons.count(), 2, `two buttons named exactly ${name}`);
      const descriptions = [await descriptionOf(buttons.nth(0)), await descriptionOf(buttons.nth(1))];
      assert.notEqual(descriptions[0], descriptions[1], `the rows' ${name} buttons are described apart`);
      for (const [i, thing] of ['Kiln A', 'Kiln B'].entries()) {
        const inRow = page.getByRole('row').filter({ hasText: thing }).getByRole('button', { name, exact: true });
        const description = await descriptionOf(inRow);
        assert.match(description, new RegExp(`^${thing} Too hot `), `${name} of ${thing}: ${description}`);
        assert.ok(descriptions.includes(description), `row ${i + 1}`);
      }
    }
    await assertAccessible(page, 'Alerts with two open alerts');
    await screenshot(page, 'numbers-alerts');
    await opened.close();
  });

  it("when a thing's latest values are shown then a value stays as the API gives it", async () => {
    const opened = await openConsole(browser, api.url, 'things/kiln-a', 'Kiln A', undefined, { locale: 'de-DE' });
    problems.push(opened.problems);
    const values = opened.page.getByRole('region', { name: 'Latest values', exact: true });
    await values.getByText('41.7', { exact: true }).waitFor();
    await opened.close();
  });

  it('when the pages were used then none reported a problem', () => {
    assert.deepEqual(problems.flat(), []);
  });
});
