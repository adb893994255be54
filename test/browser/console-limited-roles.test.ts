/**
 * Pages as roles with few permissions see them (docs/console.md, "Pages"): a part of a page the role may
 * not read says so plainly in grey, not as the API's refusal in red, and the page asks the API nothing
 * it would be refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot, signedInTab } from '../support/browser.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, defaultTemplateKey, postCreated, unique, userWithAbilities } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const store = STORES.find((s) => s.name === 'sqlite');
assert.ok(store);

describe(`the console as roles with few permissions see it [${store.name}]`, {
  skip: browserSkip || store.skip,
}, () => {
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

  /** A tab signed in as a new user of these abilities at `path`, with the requests the API refused. */
  async function openAs(abilities: number[], path: string): Promise<{ page: Page; refused: string[] }> {
    const user = await userWithAbilities(api, await api.adminToken(), abilities);
    const refused: string[] = [];
    const page = await signedInTab(browser, `${api.url}${path}`, user, problems);
    page.context().on('response', (r) => {
      if (r.status() === 403) refused.push(`${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    return { page, refused };
  }

  it('when a role may read dashboards but not things then each widget says so plainly and asks nothing', async () => {
    const token = await api.adminToken();
    const templateKey = await defaultTemplateKey(api, token);
    const thing = await createThing(api, token, { name: 'Boiler' });
    const group = await postCreated(api, token, '/api/v3/groups', {
      group: { name: unique('hall'), group_type: 1, thing_keys: [thing.thing_key] },
    });
    const layout = (y: number) => ({ x: 0, y, w: 6, h: 4 });
    const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
      dashboard: {
        name: 'Plant',
        widgets: [
          {
            type: 'timeseries',
            title: 'Temperatures',
            layout: layout(0),
            source: { thing_keys: [thing.thing_key] },
            metrics: ['temperature'],
          },
          { type: 'value', title: 'Now', layout: layout(4), thing_key: thing.thing_key, metric: 'temperature' },
          { type: 'things', title: 'Hall', layout: layout(8), source: { group_key: group.group.group_key } },
          { type: 'alerts', title: 'Alarms', layout: layout(12), source: { thing_template_key: templateKey } },
          { type: 'text', title: 'Notes', layout: layout(16), text: 'Call the plant room.' },
        ],
      },
    });
    const { page, refused } = await openAs([151], `/console/dashboards/${dashboard.dashboard_key}`);
    await page.getByRole('heading', { level: 1, name: 'Plant', exact: true }).waitFor();
    for (const title of ['Temperatures', 'Now', 'Hall', 'Alarms']) {
      const widget = page.getByRole('region', { name: title, exact: true });
      await widget.getByText('Your role may not read things.', { exact: true }).waitFor();
    }
    await page.getByRole('region', { name: 'Notes', exact: true }).getByText('Call the plant room.').waitFor();
    await page.waitForLoadState('networkidle');
    assert.equal(await page.getByText('Missing (not found', { exact: false }).count(), 0);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await screenshot(page, `${store.name}-dashboard-reads-dashboards-only`);

    // Things but neither events nor alerts: the chart and the alerts say which.
    const other = await openAs([151, 11], `/console/dashboards/${dashboard.dashboard_key}`);
    await other.page.getByRole('heading', { level: 1, name: 'Plant', exact: true }).waitFor();
    await other.page
      .getByRole('region', { name: 'Temperatures', exact: true })
      .getByText("Your role may not read things' events.", { exact: true })
      .waitFor();
    await other.page
      .getByRole('region', { name: 'Alarms', exact: true })
      .getByText('Your role may not read alerts.', { exact: true })
      .waitFor();
    await other.page.getByRole('region', { name: 'Hall', exact: true }).getByText('Boiler', { exact: true }).waitFor();
    await other.page.waitForLoadState('networkidle');
    assert.deepEqual(
      other.refused.filter((r) => !r.includes('/realtime')),
      [],
      'nothing is asked that the role would be refused',
    );
    await screenshot(other.page, `${store.name}-dashboard-reads-things-not-data`);
    await page.context().close();
    await other.page.context().close();

    // Things and their events but not templates: the chart is drawn without asking for units.
    const third = await openAs([151, 11, 121], `/console/dashboards/${dashboard.dashboard_key}`);
    const chart = third.page.getByRole('region', { name: 'Temperatures', exact: true });
    await chart.getByText(/^\d+ points?$/).waitFor();
    await third.page.waitForLoadState('networkidle');
    assert.deepEqual(third.refused, [], 'nothing is asked that the role would be refused');
    await third.page.context().close();
  });

  it('when a role may read notification actions but not rules then the page says so plainly and asks nothing', async () => {
    const { page, refused } = await openAs([111], '/console/notification-actions');
    await page.getByRole('heading', { level: 1, name: 'Notification actions', exact: true }).waitFor();
    await page
      .getByText('Actions are listed rule by rule, and your role may not read rules.', { exact: true })
      .waitFor();
    assert.equal(await page.getByRole('alert').count(), 0, 'nothing is said as a failure');
    assert.equal(await page.locator('.error').count(), 0, 'nothing in red');
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await screenshot(page, `${store.name}-actions-without-rules`);
    await page.context().close();
  });

  it('when a role may read things but not templates or groups then Things offers no filter by them and asks nothing', async () => {
    const token = await api.adminToken();
    await createThing(api, token, { name: 'Pump' });
    const { page, refused } = await openAs([11], '/console/things');
    await page.getByRole('link', { name: 'Pump', exact: true }).first().waitFor();
    await page.waitForLoadState('networkidle');
    assert.equal(await page.getByLabel('Template', { exact: true }).count(), 0);
    assert.equal(await page.getByLabel('Group', { exact: true }).count(), 0);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();

    // Templates but not groups: the template filter only.
    const other = await openAs([11, 21], '/console/things');
    await other.page.getByLabel('Template', { exact: true }).waitFor();
    await other.page.waitForLoadState('networkidle');
    assert.equal(await other.page.getByLabel('Group', { exact: true }).count(), 0);
    assert.deepEqual(other.refused, [], 'nothing is asked that the role would be refused');
    await other.page.context().close();
  });

  it('when a role that may not read groups or templates opens Things with an address naming one then the list is not narrowed by it', async () => {
    const token = await api.adminToken();
    const name = unique('Lathe');
    const inside = await createThing(api, token, { name: `${name} inside` });
    await createThing(api, token, { name: `${name} outside` });
    const { group } = await postCreated(api, token, '/api/v3/groups', {
      group: { name: unique('bay'), group_type: 1, thing_keys: [inside.thing_key] },
    });
    const templateKey = await defaultTemplateKey(api, token);
    const query = new URLSearchParams({ search: name, group: group.group_key, template: `${templateKey}-other` });
    const { page, refused } = await openAs([11], `/console/things?${query}`);
    await page.getByText('Page 1 of 1 · 2 things', { exact: true }).waitFor();
    const address = new URL(page.url()).searchParams;
    assert.equal(address.get('group'), null, 'the address no longer names the group');
    assert.equal(address.get('template'), null, 'nor the template');
    assert.deepEqual(refused, []);
    await page.context().close();
  });

  it('when a role may make and change things but not read templates then it is offered Import, not New thing, and Edit keeps the template', async () => {
    const token = await api.adminToken();
    const thing = await createThing(api, token, { name: 'Chiller' });
    const { page, refused } = await openAs([11, 12, 13], '/console/things');
    await page.getByRole('button', { name: 'Import things', exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'New thing', exact: true }).count(), 0);
    await page.goto(`${api.url}/console/things/${thing.thing_key}`);
    await page.getByRole('heading', { level: 1, name: 'Chiller', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const form = page.getByRole('form', { name: 'Edit Chiller', exact: true });
    await form.getByText('Your role may not read templates: the thing keeps Default.', { exact: true }).waitFor();
    assert.equal(await form.getByLabel('Template', { exact: true }).count(), 0);
    assert.equal(await form.locator('.error').count(), 0, 'nothing in red');
    await screenshot(page, `${store.name}-thing-edit-without-templates`);
    await form.getByLabel('Description', { exact: true }).fill('Roof');
    await form.getByRole('button', { name: 'Save', exact: true }).click();
    await form.waitFor({ state: 'detached' });
    const saved = await api.request('GET', `/api/v3/things/${thing.thing_key}`, { token });
    assert.equal(saved.body.thing.description, 'Roof');
    assert.equal(saved.body.thing.thing_template_key, thing.thing_template_key);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });

  it('when a role may manage users or API keys but not read roles then it asks for no roles and offers no choice of one', async () => {
    const users = await openAs([75], '/console/users');
    await users.page.getByRole('table', { name: 'Users' }).waitFor();
    await users.page.waitForLoadState('networkidle');
    // A new user needs a role chosen, and a role changed needs the roles to choose from.
    assert.equal(await users.page.getByRole('button', { name: 'New user', exact: true }).count(), 0);
    assert.equal(await users.page.getByRole('combobox').count(), 0);
    assert.deepEqual(users.refused, [], 'nothing is asked that the role would be refused');
    await users.page.context().close();

    const keys = await openAs([145], '/console/api-keys');
    await keys.page.getByRole('button', { name: 'New API key', exact: true }).click();
    const form = keys.page.getByRole('form', { name: 'New API key', exact: true });
    await form.getByLabel('Role', { exact: true }).waitFor();
    await keys.page.waitForLoadState('networkidle');
    assert.deepEqual(await form.getByRole('option').allInnerTexts(), ['My own role']);
    assert.deepEqual(keys.refused, [], 'nothing is asked that the role would be refused');
    await keys.page.context().close();
  });

  it('when a role may manage rules but read nothing else then the rule form says what it cannot choose and asks nothing', async () => {
    const { page, refused } = await openAs([35], '/console/rules');
    await page.getByRole('heading', { level: 1, name: 'Rules', exact: true }).waitFor();
    await page.getByRole('button', { name: 'New rule', exact: true }).first().click();
    const form = page.getByRole('form', { name: 'New rule', exact: true });
    for (const said of [
      'Your role may not read templates to choose one.',
      'Your role may not read groups to choose one.',
      'Your role may not read things to add one.',
    ]) {
      await form.getByText(said, { exact: true }).waitFor();
    }
    for (const label of ['Template', 'Group', 'Add thing']) {
      assert.equal(await form.getByLabel(label, { exact: true }).count(), 0, `${label} is not offered`);
    }
    await form.getByLabel('Name', { exact: true }).fill('Too hot');
    await form.getByLabel('Condition', { exact: true }).fill('temperature > 90');
    await form.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('cell', { name: 'Too hot', exact: true }).waitFor();
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await screenshot(page, `${store.name}-rules-reads-rules-only`);
    await page.context().close();
  });

  it('when a role may edit dashboards but not read templates or groups then the editor offers neither and asks nothing', async () => {
    const token = await api.adminToken();
    const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', { dashboard: { name: 'Hall' } });
    const { page, refused } = await openAs([155, 11], `/console/dashboards/${dashboard.dashboard_key}`);
    await page.getByRole('heading', { level: 1, name: 'Hall', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const variables = page.getByRole('form', { name: 'Variables', exact: true });
    await variables.getByText('Your role may not read templates to add a variable.', { exact: true }).waitFor();
    assert.equal(await variables.getByLabel('Template', { exact: true }).count(), 0);
    await page.getByRole('button', { name: 'Add widget', exact: true }).click();
    const form = page.getByRole('form', { name: 'Add widget', exact: true });
    await form.getByLabel('Source', { exact: true }).waitFor();
    await page.waitForLoadState('networkidle');
    assert.deepEqual(await form.getByLabel('Source', { exact: true }).getByRole('option').allInnerTexts(), ['Things']);
    assert.equal(await page.locator('.error').count(), 0, 'nothing in red');
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await screenshot(page, `${store.name}-dashboard-editor-without-templates`);
    await page.context().close();
  });

  it('when a role may read groups but not things then a group lists its members without links to pages it may not read', async () => {
    const token = await api.adminToken();
    const thing = await createThing(api, token, { name: 'Fan' });
    const name = unique('wing');
    await postCreated(api, token, '/api/v3/groups', { group: { name, group_type: 1, thing_keys: [thing.thing_key] } });
    const { page, refused } = await openAs([51], '/console/groups');
    await page.getByRole('button', { name: `Members of ${name}`, exact: true }).click();
    const members = page.getByRole('region', { name: `Members of ${name}`, exact: true });
    await members.getByText(thing.thing_key, { exact: true }).waitFor();
    assert.equal(await members.getByRole('link').count(), 0);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });

  it('when a role may not read the Overview then /console/ opens the first page it may read, asking nothing it would be refused', async () => {
    const { page, refused } = await openAs([101], '/console/');
    await page.getByRole('heading', { level: 1, name: 'Audit trail', exact: true }).waitFor();
    await page.waitForLoadState('networkidle');
    assert.equal(await page.getByRole('alert').count(), 0, 'nothing is said as a failure');
    assert.equal(await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).count(), 0);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });

  it('when a role may edit dashboards but not read things then a widget keeps its things, offers none to find, and asks nothing', async () => {
    const token = await api.adminToken();
    const thing = await createThing(api, token, { name: 'Kiln' });
    const { dashboard } = await postCreated(api, token, '/api/v3/dashboards', {
      dashboard: {
        name: 'Kilns',
        widgets: [
          {
            type: 'value',
            title: 'Heat',
            layout: { x: 0, y: 0, w: 4, h: 2 },
            thing_key: thing.thing_key,
            metric: 'temperature',
          },
        ],
      },
    });
    const { page, refused } = await openAs([155], `/console/dashboards/${dashboard.dashboard_key}`);
    await page.getByRole('heading', { level: 1, name: 'Kilns', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByRole('button', { name: 'Edit widget', exact: true }).click();
    const form = page.getByRole('form', { name: 'Edit widget 1, “Heat”', exact: true });
    await form.getByText('Your role may not read things to find one.', { exact: true }).waitFor();
    await form.getByText(thing.thing_key, { exact: true }).waitFor();
    assert.equal(await form.getByLabel('Find thing', { exact: true }).count(), 0);
    await page.waitForLoadState('networkidle');
    assert.equal(await form.getByText('not yours to read', { exact: false }).count(), 0);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });

  it('when a role may read alerts but not things then the alerts name their things without links to pages it may not read', async () => {
    const token = await api.adminToken();
    const device = new Device(api.url, await createKeyPair(api, token));
    const thingKey = unique('oven');
    assert.equal((await device.register({ thing_key: thingKey, name: 'Oven' })).status, 200);
    await postCreated(api, token, '/api/v3/rules', {
      rule: { name: unique('hot'), condition: 'temperature > 80', thing_keys: [thingKey], alert_type: 2 },
    });
    assert.equal(
      (await device.event({ events: [{ thing_key: thingKey, timestamp: Date.now(), data: { temperature: 90 } }] }))
        .status,
      200,
    );
    const { page, refused } = await openAs([91], '/console/alerts');
    await page.getByRole('cell', { name: 'Oven', exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Oven', exact: true }).count(), 0);
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });

  it('when a role may read things only then the Overview and Settings say what it may not read without asking for it', async () => {
    const { page, refused } = await openAs([11], '/console/overview');
    await page
      .getByRole('region', { name: 'Open alerts', exact: true })
      .getByText('Your role may not read alerts.', { exact: true })
      .waitFor();
    await page.waitForLoadState('networkidle');
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.goto(`${api.url}/console/settings`);
    await page
      .getByRole('region', { name: 'Retention', exact: true })
      .getByText('Only an account admin sees and sets how long events are kept.', { exact: true })
      .waitFor();
    await page.waitForLoadState('networkidle');
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });

  it('when a user signs out then whoever signs in next starts at the first page their role may read', async () => {
    const { page, refused } = await openAs([11], '/console/things');
    await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    const next = await userWithAbilities(api, await api.adminToken(), [101]);
    await page.getByLabel('Email', { exact: true }).fill(next.email);
    await page.getByLabel('Password', { exact: true }).fill(next.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit trail', exact: true }).waitFor();
    await page.waitForLoadState('networkidle');
    assert.equal(await page.getByRole('alert').count(), 0, 'nothing is said as a failure');
    assert.deepEqual(refused, [], 'nothing is asked that the role would be refused');
    await page.context().close();
  });
});
