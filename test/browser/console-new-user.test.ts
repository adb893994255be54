/**
 * What a new user met in the console (docs/console.md): `Connect a device` is reached from Things and
 * Key pairs once there are some; a permission refusal offers no `Retry`, which cannot help; and an empty
 * Things page says so alone, without a table header or a pager of nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, screenshot, signedInTab } from '../support/browser.ts';
import { childOrganisation, createThing, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

for (const store of STORES) {
  describe(`what a new user meets in the console [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    const problems: string[][] = [];

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    });
    after(async () => {
      await browser?.close();
      await api?.close();
      assert.deepEqual(problems.flat(), []);
    });

    const signedIn = (path: string): Promise<Page> =>
      signedInTab(browser, `${api.url}${path}`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, problems);

    it('when things and key pairs exist then Things and Key pairs each link to Connect a device', async () => {
      const token = await api.adminToken();
      await createThing(api, token, { name: 'Pump 1' });
      const pair = await api.request('POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'Plant' } } });
      assert.equal(pair.status, 200, pair.text);
      const page = await signedIn('/console/things');
      await page.getByRole('link', { name: 'Pump 1', exact: true }).waitFor();
      await page.getByRole('button', { name: 'New thing', exact: true }).waitFor();
      await assertAccessible(page, 'Things with a thing');
      await screenshot(page, `${store.name}-things-connect`);
      await page.screenshot({ path: `/tmp/shots/${store.name}-things-connect.png` });
      await page.getByRole('link', { name: 'Connect a device', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Connect a device', exact: true }).waitFor();
      assert.match(page.url(), /\/console\/connect$/);
      await page.goto(`${api.url}/console/key-pairs`);
      await page.getByRole('cell', { name: 'Plant', exact: true }).waitFor();
      await assertAccessible(page, 'Key pairs with a key pair');
      await page.screenshot({ path: `/tmp/shots/${store.name}-key-pairs-connect.png` });
      await page.getByRole('link', { name: 'Connect a device', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Connect a device', exact: true }).waitFor();
      assert.match(page.url(), /\/console\/connect$/);
      await page.context().close();
    });

    it('when a role lacks the permission to read a page then it says so without offering Retry', async () => {
      const token = await api.adminToken();
      // Reads rules only: Dashboards and Things are refused (403).
      const reader = await userWithAbilities(api, token, [31]);
      const page = await signedInTab(browser, `${api.url}/console/dashboards`, reader, problems);
      await page.getByRole('alert').filter({ hasText: 'lacks the permission to read dashboard' }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Retry', exact: true }).count(), 0);
      await assertAccessible(page, 'Dashboards refused');
      await page.screenshot({ path: `/tmp/shots/${store.name}-dashboards-refused.png` });
      await page.goto(`${api.url}/console/things`);
      await page.getByRole('alert').filter({ hasText: 'lacks the permission to read thing' }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Retry', exact: true }).count(), 0);
      await page.context().close();
    });

    it('when a role may read things only then the Overview and Settings say plainly what it may not read, and offer nothing it may not do', async () => {
      const child = await childOrganisation(api, await api.adminToken());
      // Reads things only, in an organisation without things yet.
      const watcher = await userWithAbilities(api, child.token, [11]);
      const page = await signedInTab(browser, `${api.url}/console/overview`, watcher, problems);
      await page.getByRole('heading', { name: 'No things yet', exact: true }).waitFor();
      await page.getByText('They show here once someone whose role may add things connects the first.').waitFor();
      assert.equal(await page.getByRole('link', { name: 'Connect a device', exact: true }).count(), 0);
      assert.equal(await page.getByRole('button', { name: 'Start a demo', exact: true }).count(), 0);
      const alerts = page.getByRole('region', { name: 'Open alerts', exact: true });
      await alerts.getByText('Your role may not read alerts.', { exact: true }).waitFor();
      assert.equal(await page.getByRole('alert').count(), 0, 'nothing is said as a failure');
      await assertAccessible(page, 'the Overview of a role that reads things only');
      await screenshot(page, `${store.name}-overview-reads-things-only`);
      await page.goto(`${api.url}/console/settings`);
      const retention = page.getByRole('region', { name: 'Retention', exact: true });
      await retention
        .getByText('Only an account admin sees and sets how long events are kept.', { exact: true })
        .waitFor();
      await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor();
      assert.equal(await page.getByRole('alert').count(), 0, 'nothing is said as a failure');
      assert.equal(await page.getByRole('button', { name: 'Save', exact: true }).count(), 0);
      await screenshot(page, `${store.name}-settings-reads-things-only`);
      await page.context().close();
    });

    it('when a load fails with a server error then Retry reads it again', async () => {
      const page = await signedIn('/console/key-pairs');
      await page.getByRole('heading', { level: 1, name: 'Key pairs', exact: true }).waitFor();
      let refused = 0;
      await page.route('**/api/v3/things?**', (route) => {
        if (refused++ > 0) return route.continue();
        return route.fulfill({ status: 500, contentType: 'application/json', body: '{"message":"Something broke"}' });
      });
      await page.getByRole('link', { name: 'Things', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'Something broke' }).waitFor();
      await page.getByRole('button', { name: 'Retry', exact: true }).click();
      await page.getByRole('link', { name: 'Pump 1', exact: true }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Retry', exact: true }).count(), 0);
      await page.context().close();
    });

    it('when an organisation has no things then Things shows the empty state alone, without table or pager', async () => {
      const child = await childOrganisation(api, await api.adminToken());
      const page = await signedInTab(browser, `${api.url}/console/things`, child, problems);
      await page.getByRole('heading', { name: 'No things yet', exact: true }).waitFor();
      await page.getByRole('button', { name: 'New thing', exact: true }).waitFor();
      assert.equal(await page.getByRole('table').count(), 0);
      assert.equal(await page.getByText(/^Page \d+ of/).count(), 0);
      assert.equal(await page.getByLabel('Search things', { exact: true }).count(), 0);
      await assertAccessible(page, 'the empty Things page');
      await page.screenshot({ path: `/tmp/shots/${store.name}-things-empty.png` });
      await page.context().close();
    });

    it('when a search matches no thing then Things says so, without table or pager', async () => {
      const page = await signedIn('/console/things');
      await page.getByRole('link', { name: 'Pump 1', exact: true }).waitFor();
      await page.getByLabel('Search things', { exact: true }).fill('nothing-is-called-this');
      await page.getByText('No thing matches the search and filters.', { exact: true }).waitFor();
      assert.equal(await page.getByRole('table').count(), 0);
      assert.equal(await page.getByText(/^Page \d+ of/).count(), 0);
      assert.equal(await page.getByRole('heading', { name: 'No things yet', exact: true }).count(), 0);
      await assertAccessible(page, 'Things matching nothing');
      await page.screenshot({ path: `/tmp/shots/${store.name}-things-no-match.png` });
      await page.context().close();
    });
  });
}
