/**
 * The console's Audit trail page in a real browser against a real server (docs/console.md,
 * "Pages", Audit trail): a change's fields before and after, shown on asking, and the list narrowed
 * to one kind of entity, kept in the address. Pages do not depend on the store here: SQLite only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, launchBrowser, screenshot } from '../support/browser.ts';
import { openConsole } from '../support/console-session.ts';
import { createThing, postCreated, unique } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { until } from './until.ts';

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

describe("the console's Audit trail page [sqlite]", { skip: browserSkip || store.skip }, () => {
  let api: TestServer;
  let browser: Browser;
  let page: Page;
  let token: string;

  before(async () => {
    [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
    token = await api.adminToken();
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it('when a rule is changed then its row shows the condition before and after, and Entity type narrows the list to rules', async () => {
    await createThing(api, token, { name: 'Press 1' });
    const name = unique('Mill overheating');
    const made = await postCreated(api, token, '/api/v3/rules', { rule: { name, condition: 'temprature > 80' } });
    const ruleKey = made.rule.rule_key as string;
    const changed = await api.request('PUT', `/api/v3/rules/${ruleKey}`, {
      token,
      body: { rule: { condition: 'temperature > 80' } },
    });
    assert.equal(changed.status, 200, changed.text);
    ({ page } = await openConsole(browser, api.url, 'audit-trail', 'Audit trail'));
    await page.getByLabel('Entity type', { exact: true }).selectOption({ label: 'Rules' });
    await page.waitForURL(/entity_type=Rule/);
    const rows = page.locator('main tbody tr');
    await rows.first().waitFor();
    // The rows of the whole trail stay shown until the filtered read answers.
    await until(
      () => page.locator('main td[data-label="Entity"]').allTextContents(),
      (entities) => entities.length > 0 && entities.every((entity) => entity === 'Rule'),
      'only rules listed',
    );
    const action = (taken: string) => page.locator('td[data-label="Action"]', { hasText: new RegExp(`^${taken}$`) });
    const update = rows.filter({ has: action('update') }).filter({ hasText: name });
    assert.equal(await update.count(), 1);
    const disclosure = update.locator('details.changes');
    assert.equal(await disclosure.getAttribute('open'), null, 'closed until asked');
    await disclosure.locator('summary').click();
    const condition = disclosure.locator('dl > div').filter({ has: page.locator('dt', { hasText: /^condition$/ }) });
    assert.equal(await condition.locator('del').textContent(), 'temprature > 80');
    assert.equal(await condition.locator('ins').textContent(), 'temperature > 80');
    const created = rows.filter({ has: action('create') }).filter({ hasText: name });
    await created.locator('details.changes summary').click();
    assert.equal(await created.locator('details.changes del').count(), 0, 'a create has no before');
    const createdCondition = created
      .locator('dl > div')
      .filter({ has: page.locator('dt', { hasText: /^condition$/ }) });
    assert.equal(await createdCondition.locator('dd').textContent(), 'temprature > 80');
    await assertAccessible(page, 'the audit trail with changes shown');
    await screenshot(page, 'sqlite-audit-changes');
    // Back at the page from its address, the filter is still chosen.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Audit trail', exact: true }).waitFor();
    assert.equal(await page.getByLabel('Entity type', { exact: true }).inputValue(), 'Rule');
  });

  it('when the search matches no change then the page says so, with no table or pager of nothing', async () => {
    ({ page } = await openConsole(browser, api.url, 'audit-trail?search=no-such-change-anywhere', 'Audit trail'));
    await page.getByRole('status').filter({ hasText: 'No change matches the search and entity type.' }).waitFor();
    assert.equal(await page.locator('main table').count(), 0, 'no table');
    assert.equal(await page.getByText(/0 changes/).count(), 0, 'no pager');
    await assertAccessible(page, 'the audit trail matching nothing');
    await screenshot(page, 'sqlite-audit-no-match');
    await page.getByLabel('Search the audit trail', { exact: true }).fill('');
    await page.locator('main tbody tr').first().waitFor();
  });

  it('when a template is made then its row names the entity in words, as the navigation does', async () => {
    const name = unique('Kiln');
    await postCreated(api, token, '/api/v3/thing_templates', { thing_template: { name } });
    ({ page } = await openConsole(browser, api.url, 'audit-trail?entity_type=ThingTemplate', 'Audit trail'));
    const made = page.locator('main tbody tr').filter({ hasText: name });
    await made.waitFor();
    assert.equal(await made.locator('td[data-label="Entity"]').textContent(), 'Template');
  });
});
