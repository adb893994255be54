/**
 * The console's Gateways page in a real browser against a real server (docs/console.md, "Pages"):
 * a gateway made with two adapters, its details and configuration document, an adapter refused with
 * the API's message, edited keeping its adapters' pids, deleted after confirming, and a role that may
 * only read offered no change.
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
  describe(`the console's Gateways page [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let admin: ConsolePage;
    let page: Page;
    let token: string;
    const shot = (name: string) => screenshot(page, `${store.name}-gateways-${name}`);
    const field = (label: string) => page.getByLabel(label, { exact: true });

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      admin = await openConsole(browser, api.url, 'gateways', 'Gateways');
      page = admin.page;
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function gatewayNamed(name: string) {
      const list = await api.request('GET', '/api/v3/gateway?per=1000', { token });
      assert.equal(list.status, 200, list.text);
      return list.body.gateway.find((g: { name: string }) => g.name === name);
    }

    it('when a gateway is made with two adapters then the API holds them and Details shows its configuration', async () => {
      await page.getByRole('heading', { name: 'No gateways yet', exact: true }).waitFor();
      await page.getByRole('button', { name: 'New gateway', exact: true }).click();
      const form = page.getByRole('form', { name: 'New gateway', exact: true });
      await form.waitFor();
      // The form takes the empty state's place: it does not say there is nothing while one is made.
      assert.equal(await page.getByRole('heading', { name: 'No gateways yet', exact: true }).count(), 0);
      await field('Name').fill('Plant 1 gateway');
      await field('Gateway type').fill('modbus');
      await field('Gateway version').fill('1.2.0');
      await field('Tags').fill('plant, line-1');
      await page.getByRole('button', { name: 'Add adapter', exact: true }).click();
      await page.getByRole('button', { name: 'Add adapter', exact: true }).click();
      await field('Adapter type').nth(0).fill('modbus-tcp');
      await field('Configuration').nth(0).fill('{"host": "10.0.0.5", "port": 502}');
      await field('Adapter type').nth(1).fill('serial');
      await page.getByRole('checkbox', { name: 'Enabled' }).nth(1).uncheck();
      await shot('new');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const stored = await gatewayNamed('Plant 1 gateway');
      assert.equal(stored.gateway_type, 'modbus');
      assert.equal(stored.gateway_version, '1.2.0');
      assert.equal(stored.tags, 'plant,line-1');
      assert.deepEqual(
        stored.adapters.map((a: Record<string, unknown>) => [a.type, a.configuration, a.enabled]),
        [
          ['modbus-tcp', '{"host": "10.0.0.5", "port": 502}', true],
          ['serial', '{}', false],
        ],
      );
      await page.getByRole('button', { name: 'Details of Plant 1 gateway', exact: true }).click();
      const details = page.getByRole('region', { name: 'Details of Plant 1 gateway', exact: true });
      await details.getByRole('figure').getByText('"gateway_type": "modbus"').waitFor();
      await details.getByRole('cell', { name: stored.adapters[0].adapter_pid, exact: true }).waitFor();
      await shot('details');
    });

    it("when an adapter's configuration is not JSON then the API's message is said under it and the form keeps it", async () => {
      const before = await gatewayNamed('Plant 1 gateway');
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'Plant 1 gateway' }).click();
      const form = page.getByRole('form', { name: 'Edit Plant 1 gateway', exact: true });
      await field('Configuration').nth(1).fill('{baud: 9600');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      const refusal = await api.request('PUT', `/api/v3/gateway/${before.gateway_key}`, {
        token,
        body: { gateway: { adapters: [{ configuration: '{baud: 9600' }] } },
      });
      assert.equal(refusal.status, 400);
      assert.equal(refusal.body.errors[0].param, 'gateway.adapters.0.configuration');
      // The second adapter's field: the first adapter's is not marked.
      await form.getByRole('alert').filter({ hasText: 'Is not valid JSON text.' }).waitFor();
      assert.equal(await descriptionOf(field('Configuration').nth(1)), 'Is not valid JSON text.');
      assert.equal(await field('Configuration').nth(0).getAttribute('aria-invalid'), null);
      assert.equal(await field('Configuration').nth(1).inputValue(), '{baud: 9600');
      await shot('refused');
      await field('Configuration').nth(1).fill('{"baud": 9600}');
      await field('Name').fill('Plant 1 gateway (east)');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const after = await gatewayNamed('Plant 1 gateway (east)');
      assert.deepEqual(
        after.adapters.map((a: Record<string, unknown>) => [a.adapter_pid, a.configuration]),
        [
          [before.adapters[0].adapter_pid, '{"host": "10.0.0.5", "port": 502}'],
          [before.adapters[1].adapter_pid, '{"baud": 9600}'],
        ],
        'the adapters keep their pids',
      );
    });

    it('when a role may only read gateways then they are shown without New gateway, Edit or Delete', async () => {
      const reader = await userWithAbilities(api, token, [81]);
      await expectReadOnly(
        browser,
        api.url,
        { path: 'gateways', heading: 'Gateways', screenshot: `${store.name}-gateways-read-only` },
        reader,
        (on) => on.getByRole('button', { name: 'Details of Plant 1 gateway (east)', exact: true }).waitFor(),
        /New gateway|Edit|Delete/,
      );
    });

    it("when a role that may not read gateways opens the page by URL then it shows the API's 403 message", async () => {
      const outsider = await userWithAbilities(api, token, [11]);
      await expectRefusedByUrl(
        api,
        browser,
        { path: 'gateways', heading: 'Gateways', listPath: '/api/v3/gateway' },
        outsider,
      );
    });

    it('when Delete is confirmed then the dialog named the gateway and it is gone', async () => {
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Plant 1 gateway (east)' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete Plant 1 gateway (east)?', exact: true });
      await dialog.getByText('is deleted with its adapters').waitFor();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('heading', { name: 'No gateways yet', exact: true }).waitFor();
      assert.equal(await gatewayNamed('Plant 1 gateway (east)'), undefined);
    });

    it('when the journeys are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(admin.problems, []);
    });
  });
}
