/**
 * The console's Groups page in a real browser against a real server (docs/console.md, "Pages"): a
 * static group made by searching things with `Add thing` and changed with `Remove`, a group by
 * expression checked as it is typed, members and their count, delete after confirming, and a role that
 * may only read offered no change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot } from '../support/browser.ts';
import { type ConsolePage, expectReadOnly, expectRefusedByUrl, openConsole } from '../support/console-session.ts';
import { createThing, defaultTemplateKey, unique, userWithAbilities } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

for (const store of STORES) {
  describe(`the console's Groups page [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let admin: ConsolePage;
    let page: Page;
    let token: string;
    const things: Record<string, string> = {};
    const shot = (on: Page, name: string) => screenshot(on, `${store.name}-groups-${name}`);
    const field = (label: string) => page.getByLabel(label, { exact: true });

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      const template = await defaultTemplateKey(api, token);
      for (const name of ['Boiler east', 'Boiler west', 'Pump north']) {
        const thing = await createThing(api, token, {
          name,
          thing_key: unique(name.split(' ')[0]?.toLowerCase() ?? 'thing'),
          thing_template_key: template,
          tags: name.startsWith('Boiler') ? ['hall-a'] : ['hall-b'],
        });
        things[name] = thing.thing_key;
      }
      admin = await openConsole(browser, api.url, 'groups', 'Groups');
      page = admin.page;
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function groupNamed(name: string) {
      const list = await api.request('GET', '/api/v3/groups?per=1000', { token });
      assert.equal(list.status, 200, list.text);
      return list.body.groups.find((g: { name: string }) => g.name === name);
    }
    async function memberKeys(groupKey: string): Promise<string[]> {
      const members = await api.request('GET', `/api/v3/groups/${groupKey}/things?per=1000`, { token });
      assert.equal(members.status, 200, members.text);
      return members.body.things.map((t: { thing_key: string }) => t.thing_key).sort();
    }
    async function addThing(search: string, name: string) {
      const box = page.getByRole('combobox', { name: 'Add thing', exact: true });
      await box.fill(search);
      await page.getByRole('option', { name: new RegExp(`^${name}`) }).click();
      await page.getByRole('button', { name: 'Remove', exact: true, description: name }).waitFor();
    }

    it('when an empty organisation opens Groups then it says so and offers New group', async () => {
      await page.getByRole('heading', { name: 'No groups yet', exact: true }).waitFor();
      await shot(page, 'empty');
      await page.getByRole('button', { name: 'New group', exact: true }).click();
    });

    it('when a static group is made with Add thing (searched by name, then by key) then the API holds those members', async () => {
      const form = page.getByRole('form', { name: 'New group', exact: true });
      await form.waitFor();
      await field('Name').fill('Boilers');
      await page.getByRole('radiogroup', { name: 'Group type' }).getByRole('radio', { name: 'Static' }).check();
      await addThing('boiler ea', 'Boiler east');
      await addThing(things['Pump north'] as string, 'Pump north');
      await shot(page, 'static');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const group = await groupNamed('Boilers');
      assert.deepEqual(await memberKeys(group.group_key), [things['Boiler east'], things['Pump north']].sort());
      await page
        .getByRole('row')
        .filter({ hasText: 'Boilers' })
        .getByRole('cell', { name: '2', exact: true })
        .waitFor();
    });

    it('when Edit removes one member and adds another then Save writes exactly the list shown', async () => {
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'Boilers' }).click();
      const form = page.getByRole('form', { name: 'Edit Boilers', exact: true });
      await page.getByRole('button', { name: 'Remove', exact: true, description: 'Pump north' }).click();
      await addThing('west', 'Boiler west');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const group = await groupNamed('Boilers');
      assert.deepEqual(await memberKeys(group.group_key), [things['Boiler east'], things['Boiler west']].sort());
      await page.getByRole('button', { name: 'Members of Boilers', exact: true }).click();
      const members = page.getByRole('region', { name: 'Members of Boilers', exact: true });
      await members.getByRole('link', { name: 'Boiler west', exact: true }).waitFor();
      assert.equal(await members.getByRole('link').count(), 2);
      await shot(page, 'members');
    });

    it("when an expression is typed then the API's message shows next to it without submitting, and a valid one saves", async () => {
      await page.getByRole('button', { name: 'New group', exact: true }).click();
      const form = page.getByRole('form', { name: 'New group', exact: true });
      await field('Name').fill('Hall A');
      await page.getByRole('radio', { name: 'By expression' }).check();
      let posted = 0;
      page.on('request', (r) => {
        if (r.method() === 'POST' && r.url().endsWith('/api/v3/groups')) posted++;
      });
      const bad = "tags contains 'hall-a' and";
      const refusal = await api.request('POST', '/api/v3/expressions/validate', {
        token,
        body: { expression: bad, kind: 'group' },
      });
      assert.equal(refusal.status, 400);
      await field('Expression').pressSequentially(bad, { delay: 20 });
      const expression = field('Expression');
      // The API's words about the expression, as a sentence under the field (without its name).
      const words = refusal.body.errors[0].message as string;
      const said = `${words.charAt(0).toUpperCase()}${words.slice(1)}${/[.!?)]$/.test(words) ? '' : '.'}`;
      await form.getByText(said, { exact: true }).waitFor({ timeout: 2000 });
      assert.equal(await expression.getAttribute('aria-invalid'), 'true');
      assert.equal(posted, 0, 'checking saved nothing');
      await shot(page, 'expression-refused');
      await expression.fill("tags contains 'hall-a'");
      await form.getByText('The expression is valid.').waitFor({ timeout: 2000 });
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await form.waitFor({ state: 'detached' });
      const group = await groupNamed('Hall A');
      assert.equal(group.thing_expression, "tags contains 'hall-a'");
      assert.deepEqual(await memberKeys(group.group_key), [things['Boiler east'], things['Boiler west']].sort());
      await page.getByRole('row').filter({ hasText: 'Hall A' }).getByRole('cell', { name: '2', exact: true }).waitFor();
      await shot(page, 'list');
    });

    it('when Escape is pressed in Add thing with its suggestions open then only they close, and a second Escape leaves the form with the group unchanged', async () => {
      const group = await groupNamed('Boilers');
      const members = await memberKeys(group.group_key);
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'Boilers' }).click();
      const form = page.getByRole('form', { name: 'Edit Boilers', exact: true });
      await form.waitFor();
      await page.getByRole('button', { name: 'Remove', exact: true, description: 'Boiler west' }).click();
      const box = page.getByRole('combobox', { name: 'Add thing', exact: true });
      await box.fill('pump');
      const option = page.getByRole('option', { name: /^Pump north/ });
      await option.waitFor();
      await box.press('Escape');
      await option.waitFor({ state: 'detached' });
      assert.equal(await form.count(), 1, 'the first Escape closed only the suggestions');
      await box.press('Escape');
      await form.waitFor({ state: 'detached' });
      assert.deepEqual(await memberKeys(group.group_key), members, 'nothing was saved');
    });

    it('when Groups lists its groups then every member count comes in one request, not one per row', async () => {
      const asked: string[] = [];
      const watch = (r: { url: () => string }) => {
        const path = new URL(r.url()).pathname;
        if (path.startsWith('/api/v3/group')) asked.push(path);
      };
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Things', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Things', exact: true }).waitFor();
      await page.waitForLoadState('networkidle');
      page.on('request', watch);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Groups', exact: true }).click();
      await page.getByRole('row').filter({ hasText: 'Hall A' }).getByRole('cell', { name: '2', exact: true }).waitFor();
      await page
        .getByRole('row')
        .filter({ hasText: 'Boilers' })
        .getByRole('cell', { name: '2', exact: true })
        .waitFor();
      await page.waitForLoadState('networkidle');
      page.off('request', watch);
      assert.deepEqual(asked, ['/api/v3/groups', '/api/v3/group_member_counts']);
    });

    it('when Delete is confirmed then the dialog named the group and it is gone, its things kept', async () => {
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Hall A' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete Hall A?', exact: true });
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await dialog.waitFor({ state: 'hidden' });
      await page
        .getByRole('button', { name: 'Delete', exact: true, description: 'Hall A' })
        .waitFor({ state: 'detached' });
      assert.equal(await groupNamed('Hall A'), undefined);
      assert.equal((await api.request('GET', `/api/v3/things/${things['Boiler east']}`, { token })).status, 200);
    });

    it('when a role may only read groups then the groups and members are shown without New group, Edit or Delete, nor links to things it may not read', async () => {
      const reader = await userWithAbilities(api, token, [51]);
      await expectReadOnly(
        browser,
        api.url,
        { path: 'groups', heading: 'Groups', screenshot: `${store.name}-groups-read-only` },
        reader,
        async (on) => {
          await on.getByRole('button', { name: 'Members of Boilers', exact: true }).click();
          await on.getByText('Boiler east', { exact: true }).waitFor();
          assert.equal(await on.getByRole('link', { name: 'Boiler east', exact: true }).count(), 0);
        },
        /New group|Edit|Delete/,
      );
    });

    it("when a role that may not read groups opens the page by URL then it shows the API's 403 message", async () => {
      const outsider = await userWithAbilities(api, token, [11]);
      await expectRefusedByUrl(
        api,
        browser,
        { path: 'groups', heading: 'Groups', listPath: '/api/v3/groups' },
        outsider,
      );
    });

    it('when the journeys are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(admin.problems, []);
    });
  });
}
