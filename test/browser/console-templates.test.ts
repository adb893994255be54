/**
 * The console's Templates page in a real browser against a real server (docs/console.md, "Pages"):
 * a template made with its metrics, edited, refused with the API's message, deleted after confirming,
 * and a role that may only read offered no change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, descriptionOf, launchBrowser, screenshot } from '../support/browser.ts';
import { type ConsolePage, expectReadOnly, expectRefusedByUrl, openConsole } from '../support/console-session.ts';
import { userWithAbilities } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

for (const store of STORES) {
  describe(`the console's Templates page [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let admin: ConsolePage;
    let page: Page;
    let token: string;
    const shot = (on: Page, name: string) => screenshot(on, `${store.name}-templates-${name}`);
    const field = (label: string) => page.getByLabel(label, { exact: true });

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      admin = await openConsole(browser, api.url, 'templates', 'Templates');
      page = admin.page;
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function templateNamed(name: string) {
      const list = await api.request('GET', `/api/v3/thing_templates?search=${encodeURIComponent(name)}`, { token });
      assert.equal(list.status, 200, list.text);
      return list.body.thing_templates.find((t: { name: string }) => t.name === name);
    }

    it('when New template is filled in with two metrics and saved then the API holds it as typed and the list shows it', async () => {
      await page.getByRole('button', { name: 'New template', exact: true }).click();
      const form = page.getByRole('form', { name: 'New template', exact: true });
      await field('Name').fill('Boilers <b>hot</b>');
      await field('Description').fill('Gas boilers of hall A');
      await field('Heartbeat interval').fill('30');
      await field('Idle timeout').fill('600');
      await field('Retention (days)').fill('90');
      await page.getByRole('button', { name: 'Add metric', exact: true }).click();
      await page.getByRole('button', { name: 'Add metric', exact: true }).click();
      await field('Metric name').nth(0).fill('temperature');
      await field('Unit').nth(0).fill('°C');
      await field('Metric name').nth(1).fill('burner');
      await field('Data type').nth(1).selectOption('boolean');
      await shot(page, 'new');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const stored = await templateNamed('Boilers <b>hot</b>');
      assert.ok(stored, 'the template was created');
      assert.deepEqual(
        {
          description: stored.description,
          heartbeat_interval: stored.heartbeat_interval,
          idle_timeout: stored.idle_timeout,
          retention_days: stored.retention_days,
          metrics: stored.metrics,
        },
        {
          description: 'Gas boilers of hall A',
          heartbeat_interval: 30,
          idle_timeout: 600,
          retention_days: 90,
          metrics: [
            { name: 'temperature', data_type: 'number', unit: '°C' },
            { name: 'burner', data_type: 'boolean', unit: '' },
          ],
        },
      );
      // The name is text, never HTML.
      const row = page.getByRole('row').filter({ hasText: 'Boilers <b>hot</b>' });
      await row.waitFor();
      assert.equal(await page.locator('td b').count(), 0);
      // Its key, which imports and the API name it by, is in the list.
      assert.equal(await row.getByRole('cell').nth(1).textContent(), stored.thing_template_key);
      await shot(page, 'list');
    });

    it("when Edit changes a template's metrics then Save writes them and keeps the other fields", async () => {
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'Boilers <b>hot</b>' }).click();
      const form = page.getByRole('form', { name: 'Edit Boilers <b>hot</b>', exact: true });
      assert.equal(await field('Heartbeat interval').inputValue(), '30');
      assert.equal(await field('Metric name').nth(1).inputValue(), 'burner');
      await page.getByRole('button', { name: 'Remove metric 2', exact: true }).click();
      await field('Unit').fill('K');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const stored = await templateNamed('Boilers <b>hot</b>');
      assert.deepEqual(stored.metrics, [{ name: 'temperature', data_type: 'number', unit: 'K' }]);
      assert.equal(stored.retention_days, 90);
      assert.equal(stored.idle_timeout, 600);
    });

    it('when the API refuses a template then its message is said under the field it names and the form keeps what was typed', async () => {
      await page.getByRole('button', { name: 'New template', exact: true }).click();
      await field('Name').fill('Boilers <b>hot</b>');
      await field('Description').fill('a second one');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      const form = page.getByRole('form', { name: 'New template', exact: true });
      const refusal = await api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: 'Boilers <b>hot</b>' } },
      });
      assert.equal(refusal.status, 409);
      assert.equal(refusal.body.errors[0].param, 'thing_template.name');
      const plain = 'A thing template named "Boilers <b>hot</b>" already exists in this organisation.';
      await form.getByRole('alert').filter({ hasText: plain }).waitFor();
      assert.equal(await descriptionOf(field('Name')), plain);
      assert.equal(await field('Description').inputValue(), 'a second one');
      await shot(page, 'refused');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    });

    it('when Delete is pressed then a dialog names the template, and only confirming deletes it', async () => {
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Boilers <b>hot</b>' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete Boilers <b>hot</b>?', exact: true });
      await dialog.waitFor();
      await shot(page, 'delete');
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      assert.ok(await templateNamed('Boilers <b>hot</b>'), 'Cancel keeps it');
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Boilers <b>hot</b>' }).click();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await dialog.waitFor({ state: 'hidden' });
      await page.getByRole('row').filter({ hasText: 'Boilers <b>hot</b>' }).waitFor({ state: 'detached' });
      assert.equal(await templateNamed('Boilers <b>hot</b>'), undefined);
    });

    it('when a role may only read templates then the list is shown without New template, Edit or Delete', async () => {
      const reader = await userWithAbilities(api, token, [21]);
      await expectReadOnly(
        browser,
        api.url,
        { path: 'templates', heading: 'Templates', screenshot: `${store.name}-templates-read-only` },
        reader,
        (on) => on.getByRole('row').filter({ hasText: 'Default' }).waitFor(),
        /New template|Edit|Delete/,
      );
    });

    it("when a role that may not read templates opens the page by URL then it shows the API's 403 message", async () => {
      const outsider = await userWithAbilities(api, token, [11]);
      await expectRefusedByUrl(
        api,
        browser,
        { path: 'templates', heading: 'Templates', listPath: '/api/v3/thing_templates' },
        outsider,
      );
    });

    it('when the journeys are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(admin.problems, []);
    });
  });
}
