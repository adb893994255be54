/**
 * Every section of the console in a real browser against a real server (docs/console.md): the one
 * navigation landmark names the sixteen sections in their groups, each page is reached by its link and
 * by its URL, and axe-core finds no serious or critical accessibility violation on any of them (the
 * sign-in page and a thing's page included), nor with each page's main form open.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, screenshot, watchProblems } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { unique } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

/** The sections in the navigation's order: link name, path, heading. */
const SECTIONS = [
  ['Overview', 'overview', 'Overview'],
  ['Dashboards', 'dashboards', 'Dashboards'],
  ['Things', 'things', 'Things'],
  ['Templates', 'templates', 'Templates'],
  ['Groups', 'groups', 'Groups'],
  ['Gateways', 'gateways', 'Gateways'],
  ['Alerts', 'alerts', 'Alerts'],
  ['Audit trail', 'audit-trail', 'Audit trail'],
  ['Rules', 'rules', 'Rules'],
  ['Notification actions', 'notification-actions', 'Notification actions'],
  ['Key pairs', 'key-pairs', 'Key pairs'],
  ['API keys', 'api-keys', 'API keys'],
  ['Users', 'users', 'Users'],
  ['Roles', 'roles', 'Roles'],
  ['Organisations', 'organisations', 'Organisations'],
  ['Settings', 'settings', 'Settings'],
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

for (const store of STORES) {
  describe(`every page of the console in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let page: Page;
    let problems: string[];

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
      page.setDefaultTimeout(15_000);
      problems = watchProblems(page);
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    it('when the sign-in page is shown then it has no serious accessibility violation', async () => {
      await page.goto(`${api.url}/console/`);
      await page.getByLabel('Organisation key', { exact: true }).waitFor();
      await assertAccessible(page, 'the sign-in page');
      await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
    });

    it('when signed in as an account admin then one navigation landmark names all sixteen sections in their groups', async () => {
      assert.equal(await page.getByRole('navigation').count(), 1);
      const navigation = page.getByRole('navigation', { name: 'Main' });
      await navigation.getByRole('link', { name: 'Settings', exact: true }).waitFor();
      assert.deepEqual(
        await navigation.getByRole('link').allTextContents(),
        SECTIONS.map(([name]) => name),
      );
      const groups = await navigation
        .getByRole('list')
        .evaluateAll((lists) => lists.map((list) => list.getAttribute('aria-labelledby') ?? ''));
      const groupNames = await Promise.all(groups.map((id) => page.locator(`[id="${id}"]`).textContent()));
      assert.deepEqual(groupNames, ['Fleet', 'Monitoring', 'Automation', 'Access', 'Settings']);
      await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
    });

    for (const [name, path, heading] of SECTIONS) {
      it(`when ${name} is opened from the navigation and by its URL then it shows its page, without serious accessibility violations`, async () => {
        await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
        await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
        assert.equal(new URL(page.url()).pathname, `/console/${path}`);
        assert.equal(await page.getByRole('link', { name, exact: true }).getAttribute('aria-current'), 'page');
        // Let the page's reads settle before it is checked.
        await page.waitForLoadState('networkidle');
        // A count of one is singular: the admin is the only user yet.
        if (path === 'users') await page.getByText('Page 1 of 1 · 1 user', { exact: true }).waitFor();
        await assertAccessible(page, `the ${name} page`);
        await screenshot(page, `page-${store.name}-${path}`);
        await page.goto(`${api.url}/console/${path}`);
        await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
        assert.equal(await page.title(), `${name} · Thingbase`);
      });
    }

    it("when a thing's page is shown then it has no serious accessibility violation", async () => {
      const token = await api.adminToken();
      const device = new Device(api.url, await createKeyPair(api, token));
      const thingKey = unique('mixer');
      assert.equal((await device.register({ thing_key: thingKey, name: 'Mixer', bi_directional: true })).status, 200);
      assert.equal((await device.event({ thing_key: thingKey, data: { speed: 41.7 } })).status, 200);
      await page.goto(`${api.url}/console/things/${thingKey}`);
      await page.getByRole('heading', { level: 1, name: 'Mixer', exact: true }).waitFor();
      await page
        .getByRole('region', { name: 'Telemetry', exact: true })
        .getByText('1 point · speed', { exact: true })
        .waitFor();
      await page.waitForLoadState('networkidle');
      await assertAccessible(page, "a thing's page");
    });

    it("when a table's rows offer several buttons then they sit on one line, headings break between words only, and buttons keep apart from a page's filters", async () => {
      const made = await api.request('POST', '/api/v3/thing_templates', {
        token: await api.adminToken(),
        body: {
          thing_template: {
            name: 'Boiler',
            description: 'Gas boilers of the plant rooms',
            metrics: [
              { name: 'temperature', data_type: 'number', unit: '°C' },
              { name: 'pressure', data_type: 'number', unit: 'bar' },
            ],
          },
        },
      });
      assert.equal(made.status, 200, made.text);
      await page.goto(`${api.url}/console/templates`);
      const row = page.getByRole('table', { name: 'Templates' }).getByRole('row').filter({ hasText: 'Gas boilers' });
      const edit = await row.getByRole('button', { name: 'Edit', exact: true, description: 'Boiler' }).boundingBox();
      const remove = await row
        .getByRole('button', { name: 'Delete', exact: true, description: 'Boiler' })
        .boundingBox();
      assert.ok(edit && remove);
      assert.equal(remove.y, edit.y, 'Delete is beside Edit, not under it');
      // A column's heading breaks between words only, never inside one (`Actio` over `n`).
      // On a narrow window, where the columns are squeezed.
      await page.setViewportSize({ width: 800, height: 860 });
      await page.goto(`${api.url}/console/audit-trail`);
      await page.getByRole('table').getByRole('row').nth(1).waitFor();
      const lines = await page
        .getByRole('table')
        .getByRole('columnheader', { name: 'Action', exact: true })
        .evaluate((cell) => {
          const range = cell.ownerDocument.createRange();
          range.selectNodeContents(cell);
          return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
        });
      await page.setViewportSize({ width: 1280, height: 860 });
      assert.equal(lines, 1, 'the heading Action is on one line');
      await page.goto(`${api.url}/console/things`);
      const button = await page.getByRole('button', { name: 'New thing', exact: true }).boundingBox();
      const search = await page.getByText('Search things', { exact: true }).boundingBox();
      assert.ok(button && search);
      assert.ok(search.y - (button.y + button.height) >= 8, `${search.y - (button.y + button.height)} px apart`);
    });

    for (const [path, button, form] of FORMS) {
      it(`when ${button} is pressed on /console/${path} then the page with its form open has no serious accessibility violation`, async () => {
        if (path === 'notification-actions') {
          // An action belongs to a rule: the button is offered once there is one.
          const made = await api.request('POST', '/api/v3/rules', {
            token: await api.adminToken(),
            body: { rule: { name: unique('rule'), condition: 'speed > 50', alert_type: 1, alert_message: 'Fast' } },
          });
          assert.equal(made.status, 200, made.text);
        }
        await page.goto(`${api.url}/console/${path}`);
        await page.getByRole('button', { name: button, exact: true }).first().click();
        await page.getByRole('form', { name: form, exact: true }).waitFor();
        await page.waitForLoadState('networkidle');
        await assertAccessible(page, `the ${button} form of /console/${path}`);
      });
    }

    it('when the audit trail is searched then the search is kept in the address, and a reload finds it', async () => {
      await page.goto(`${api.url}/console/audit-trail`);
      const search = page.getByLabel('Search the audit trail', { exact: true });
      await search.fill('Role');
      await page.waitForURL(/[?&]search=Role(&|$)/);
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Audit trail', exact: true }).waitFor();
      assert.equal(await page.getByLabel('Search the audit trail', { exact: true }).inputValue(), 'Role');
    });

    it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
      assert.deepEqual(problems, []);
    });
  });
}
