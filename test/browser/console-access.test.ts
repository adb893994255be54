/**
 * The console's access pages in a real browser against a real server (docs/console.md): roles with one
 * checkbox per ability, users, API keys with their token shown once, an OEM parent entering a child
 * organisation, settings; refusals shown next to the control that sent them with what was typed kept,
 * confirmations that name what is deleted, and a role that may only read offered no write control.
 * Keyboard and screen-reader access to every page: a skip link is the first Tab stop and takes the
 * focus to the page's heading, scrolled into view, and the focus goes to a new page's heading when
 * another page is chosen.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import {
  assertHeadingFocused,
  browserSkip,
  descriptionOf,
  isFocused,
  launchBrowser,
  screenshot,
  signedInTab,
} from '../support/browser.ts';
import { createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

/** The server's EVENTS_PER_SECOND_PER_KEY_PAIR, which Settings shows. */
const PER_KEY_PAIR = 40;

for (const store of STORES) {
  describe(`the console's access pages in a browser [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let token: string;
    const problems: string[][] = [];
    const shot = (page: Page, name: string) => screenshot(page, `access-${store.name}-${name}`);

    before(async () => {
      [api, browser] = await Promise.all([
        // A key pair's limit, which the Settings page shows beside the organisation's.
        startServer(store, { env: { EVENTS_PER_SECOND_PER_KEY_PAIR: String(PER_KEY_PAIR) } }),
        launchBrowser(),
      ]);
      token = await api.adminToken();
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    const signedIn = (path: string, email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<Page> =>
      signedInTab(browser, `${api.url}${path}`, { email, password }, problems);

    const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
    const row = (page: Page, text: string) => page.getByRole('row').filter({ hasText: text });
    const roleNamed = async (name: string) =>
      (
        (await api.request('GET', '/api/v3/roles', { token, query: { per: 100 } })).body.roles as {
          name: string;
          role_key: string;
          abilities: number[];
        }[]
      ).find((r) => r.name === name);

    it('when a role is made, changed and deleted then each ability is a named checkbox and the API holds what was saved', async () => {
      const page = await signedIn('/console/roles');
      await page.getByRole('heading', { level: 1, name: 'Roles', exact: true }).waitFor();
      await button(page, 'New role').click();
      await page.getByLabel('Name', { exact: true }).fill('Line viewers');
      for (const name of ['thing read', 'alert read']) await page.getByRole('checkbox', { name, exact: true }).check();
      for (const name of ['thing_template update', 'all all', 'api_key delete']) {
        await page.getByRole('checkbox', { name, exact: true }).waitFor();
      }
      await assertAccessible(page, 'the new role form');
      await shot(page, 'new-role');
      await button(page, 'Save').click();
      await row(page, 'Line viewers').getByRole('cell', { name: 'thing read, alert read', exact: true }).waitFor();
      assert.deepEqual((await roleNamed('Line viewers'))?.abilities, [11, 91]);

      // A refusal of the name is said under it in plain words, and the form keeps what was typed.
      await button(page, 'New role').click();
      await page.getByLabel('Name', { exact: true }).fill('Line viewers');
      await page.getByRole('checkbox', { name: 'rule read', exact: true }).check();
      await button(page, 'Save').click();
      const taken = await api.request('POST', '/api/v3/roles', {
        token,
        body: { role: { name: 'Line viewers', abilities: [31] } },
      });
      assert.equal(taken.status, 409);
      assert.equal(taken.body.errors[0].param, 'role.name');
      const plain = 'A role named "Line viewers" already exists in this organisation.';
      await page.getByRole('form', { name: 'New role' }).getByRole('alert').filter({ hasText: plain }).waitFor();
      assert.equal(await description(page, 'Name'), plain);
      assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'Line viewers');
      assert.equal(await page.getByRole('checkbox', { name: 'rule read', exact: true }).isChecked(), true);
      await button(page, 'Cancel').click();

      await page.getByRole('button', { name: 'Edit', exact: true, description: 'Line viewers' }).click();
      await page.getByRole('checkbox', { name: 'alert read', exact: true }).uncheck();
      await page.getByRole('checkbox', { name: 'thing_template update', exact: true }).check();
      await button(page, 'Save').click();
      await row(page, 'Line viewers')
        .getByRole('cell', { name: 'thing read, thing_template update', exact: true })
        .waitFor();
      assert.deepEqual((await roleNamed('Line viewers'))?.abilities, [11, 23]);
      assert.equal(
        await row(page, 'Account Admin').getByRole('button', { name: 'Edit', exact: true }).count(),
        0,
        'built-in roles are not offered for change',
      );

      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Line viewers' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete the role Line viewers?', exact: true });
      await dialog.getByText(/The role Line viewers is deleted/).waitFor();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await row(page, 'Line viewers').waitFor({ state: 'detached' });
      assert.equal(await roleNamed('Line viewers'), undefined);
      await page.close();
    });

    const description = (page: Page, label: string) => descriptionOf(page.getByLabel(label, { exact: true }));

    it('when a user is created, given another role and deleted then the API says so, and a refused create keeps the form', async () => {
      const role = await api.request('POST', '/api/v3/roles', {
        token,
        body: { role: { name: 'Operators', abilities: [11, 91, 93] } },
      });
      assert.equal(role.status, 200, role.text);
      const page = await signedIn('/console/users');
      await page.getByRole('heading', { level: 1, name: 'Users', exact: true }).waitFor();
      let sent = 0;
      page.on('request', (r) => {
        if (['POST', 'PUT'].includes(r.method()) && new URL(r.url()).pathname.startsWith('/api/v3/users')) sent++;
      });
      const email = `${unique('op')}@example.com`;
      await button(page, 'New user').click();
      // No role is chosen for the admin, the devices' Agent least of all; the hint says what one may do.
      const roleField = page.getByLabel('Role', { exact: true });
      await roleField.getByRole('option', { name: 'Choose a role', exact: true, selected: true }).waitFor({
        state: 'attached',
      });
      assert.equal(await roleField.inputValue(), '');
      await page.getByLabel('Email', { exact: true }).fill(email);
      await page.getByLabel('Name', { exact: true }).fill('Olga <i>Operator</i>');
      await page.getByLabel('Password', { exact: true }).fill('a long enough password');
      await button(page, 'Create').click();
      assert.equal(await roleField.evaluate((select) => select.matches(':invalid')), true);
      assert.equal(sent, 0, 'nothing is sent without a role');
      await roleField.selectOption({ label: 'Agent' });
      assert.match(
        await description(page, 'Role'),
        /^Agent is the role of devices' key pairs \(.*alert create.*\), not of people\. Without alert read, the Overview cannot show the open alerts\.$/,
      );
      await roleField.selectOption({ label: 'Operators' });
      assert.equal(await description(page, 'Role'), 'Operators may: thing read, alert read, alert update.');

      // A short password is said under its field before anything is sent.
      await page.getByLabel('Password', { exact: true }).fill('short');
      await button(page, 'Create').click();
      const password = page.getByLabel('Password', { exact: true });
      await page.getByRole('alert').filter({ hasText: 'Use at least 8 characters: this one has 5.' }).waitFor();
      assert.equal(await description(page, 'Password'), 'Use at least 8 characters: this one has 5.');
      assert.equal(await password.getAttribute('aria-invalid'), 'true');
      assert.equal(sent, 0, 'a short password is not sent');
      await shot(page, 'new-user-short-password');

      // The API's refusal is said under the field it names, in plain words, and the form keeps what was typed.
      await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
      await password.fill('a long enough password');
      await button(page, 'Create').click();
      const taken = await api.request('POST', '/api/v3/users', {
        token,
        body: { user: { email: ADMIN_EMAIL, password: 'a long enough password', role_key: role.body.role.role_key } },
      });
      assert.equal(taken.status, 409);
      assert.equal(taken.body.errors[0].param, 'user.email');
      const plain = `A user with the e-mail address ${ADMIN_EMAIL} already exists.`;
      await page.getByRole('form', { name: 'New user' }).getByRole('alert').filter({ hasText: plain }).waitFor();
      assert.equal(await description(page, 'Email'), plain);
      assert.equal(await page.getByText(taken.body.message).count(), 0, "the API's own wording is not shown");
      assert.equal(await password.inputValue(), 'a long enough password');
      await assertAccessible(page, 'the new user form with a refusal');
      await shot(page, 'new-user-refused');
      await page.getByLabel('Email', { exact: true }).fill(email);
      await button(page, 'Create').click();
      await row(page, email).getByRole('cell', { name: 'Olga <i>Operator</i>', exact: true }).waitFor();
      await page
        .getByRole('status')
        .filter({ hasText: `${email} was created with the role Operators.` })
        .waitFor();
      const users = (await api.request('GET', '/api/v3/users', { token, query: { per: 100 } })).body.users as {
        email: string;
        role_key: string;
        user_key: string;
      }[];
      const made = users.find((u) => u.email === email);
      assert.equal(made?.role_key, role.body.role.role_key);
      await assertAccessible(page, 'the users page');

      // Another role is only proposed until Save; Cancel drops it.
      const admin = (await api.request('GET', '/api/v3/roles', { token, query: { per: 100 } })).body.roles.find(
        (r: { account_admin: boolean }) => r.account_admin,
      );
      const roleOf = async () =>
        (await api.request('GET', `/api/v3/users/${made?.user_key}`, { token })).body.user.role_key as string;
      const choice = page.getByRole('combobox', { name: `Role of ${email}`, exact: true });
      sent = 0;
      await choice.selectOption({ label: 'Account Admin' });
      await button(page, `Cancel the role change of ${email}`).click();
      assert.equal(await choice.inputValue(), role.body.role.role_key);
      await button(page, `Save the role of ${email}`).waitFor({ state: 'detached' });
      await choice.selectOption({ label: 'Account Admin' });
      await shot(page, 'user-role-proposed');
      assert.equal(sent, 0, 'choosing sends nothing');
      assert.equal(await roleOf(), role.body.role.role_key);
      await button(page, `Save the role of ${email}`).click();
      await page
        .getByRole('status')
        .filter({ hasText: `The role of ${email} is now Account Admin.` })
        .waitFor();
      assert.equal(await roleOf(), admin.role_key);
      await button(page, `Save the role of ${email}`).waitFor({ state: 'detached' });
      await shot(page, 'user-role-saved');
      await assertAccessible(page, 'the users page after a role change');

      await page.getByRole('button', { name: 'Delete', exact: true, description: email }).click();
      const dialog = page.getByRole('dialog', { name: `Delete ${email}?`, exact: true });
      await dialog.getByText(`The user ${email} is deleted`, { exact: false }).waitFor();
      await shot(page, 'delete-user');
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await row(page, email).waitFor({ state: 'detached' });
      assert.equal((await api.request('GET', `/api/v3/users/${made?.user_key}`, { token })).status, 404);
      await page.close();
    });

    it('when an API key is created then its token is shown once and works, and once deleted after confirming it is refused', async () => {
      const page = await signedIn('/console/api-keys');
      await page.getByRole('heading', { level: 1, name: 'API keys', exact: true }).waitFor();
      await button(page, 'New API key').click();
      await page.getByLabel('Name', { exact: true }).fill('Nightly export');
      await page.getByLabel('Role', { exact: true }).selectOption({ label: 'Agent' });
      await page.getByLabel('Expires', { exact: true }).fill('2099-01-01T00:00');
      await button(page, 'Create').click();
      const shown = page.getByRole('figure', { name: 'Token', exact: true }).locator('pre');
      await shown.filter({ hasText: /^tbk_/ }).waitFor();
      const keyToken = ((await shown.textContent()) ?? '').trim();
      const caller = await api.request('GET', '/api/v3/caller', { token: keyToken });
      assert.equal(caller.status, 200, caller.text);
      assert.equal(caller.body.caller.role, 'Agent');
      await row(page, 'Nightly export').getByRole('cell', { name: 'Agent', exact: true }).waitFor();
      await shot(page, 'api-key-token');
      await assertAccessible(page, 'the API keys page with a token');

      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users', exact: true }).click();
      await page.goBack();
      await row(page, 'Nightly export').waitFor();
      assert.equal(await page.getByText(keyToken).count(), 0, 'the token is gone');

      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Nightly export' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete the API key Nightly export?', exact: true });
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      assert.equal((await api.request('GET', '/api/v3/caller', { token: keyToken })).status, 200, 'Cancel keeps it');
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'Nightly export' }).click();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await row(page, 'Nightly export').waitFor({ state: 'detached' });
      assert.equal((await api.request('GET', '/api/v3/caller', { token: keyToken })).status, 401);
      await page.close();
    });

    it('when an OEM admin makes a child organisation and signs in to it then the console shows the child', async () => {
      const page = await signedIn('/console/organisations');
      await page.getByRole('heading', { level: 1, name: 'Organisations', exact: true }).waitFor();
      const name = unique('Plant');
      await button(page, 'New organisation').click();
      await page.getByLabel('Name', { exact: true }).fill(name);
      await button(page, 'Create').click();
      await row(page, name).waitFor();
      await assertAccessible(page, 'the organisations page');

      await button(page, `Sign in to ${name}`).click();
      const dialog = page.getByRole('dialog', { name: `Sign in to ${name}`, exact: true });
      await dialog.getByLabel('Password', { exact: true }).fill('not the password');
      await dialog.getByRole('button', { name: 'Sign in', exact: true }).click();
      const wrong = await api.request('POST', '/api_sign_in', {
        body: { email: ADMIN_EMAIL, password: 'not the password' },
      });
      await dialog.getByRole('alert').filter({ hasText: wrong.body.message }).waitFor();
      assert.equal(await dialog.getByLabel('Password', { exact: true }).inputValue(), 'not the password');
      await shot(page, 'sign-in-to-child-refused');
      await dialog.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await dialog.getByRole('button', { name: 'Sign in', exact: true }).click();

      await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
      await page.getByText(`${ADMIN_EMAIL} · ${name}`, { exact: true }).waitFor();
      await page.getByRole('figure', { name: 'Things', exact: true }).filter({ hasText: /^0$/ }).waitFor();
      const session = (await page.evaluate('sessionStorage.getItem("thingbase.session")')) as string;
      const childToken = JSON.parse(session).token as string;
      const child = await api.request('GET', '/api/v3/caller', { token: childToken });
      assert.equal(child.status, 200);
      const children = (await api.request('GET', '/api/v3/organisations', { token, query: { per: 100 } })).body
        .organisations as { name: string; organisation_key: string }[];
      assert.equal(child.body.caller.organisation_key, children.find((o) => o.name === name)?.organisation_key);
      // A child that is not an OEM organisation has no children to manage.
      const navigation = page.getByRole('navigation', { name: 'Main' });
      await navigation.getByRole('link', { name: 'Settings', exact: true }).waitFor();
      assert.equal(await navigation.getByRole('link', { name: 'Organisations', exact: true }).count(), 0);
      await shot(page, 'in-child');

      // Signing out leaves the child's pages: whoever signs in next starts at /console/ (the Overview
      // for the admin), not on a thing of the child that the parent's session cannot see.
      const thing = await createThing(api, childToken, {});
      await navigation.getByRole('link', { name: 'Things', exact: true }).click();
      await page.getByRole('link', { name: thing.name, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: thing.name, exact: true }).waitFor();
      await button(page, 'Sign out').click();
      await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview', exact: true }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/console/');
      await page.close();
    });

    it("when the admin saves retention then the API holds it, and usage shows the API's figures", async () => {
      const page = await signedIn('/console/settings');
      await page.getByRole('heading', { level: 1, name: 'Settings', exact: true }).waitFor();
      const usage = (await api.request('GET', '/api/v3/usage', { token })).body.usage;
      for (const [name, value] of [
        ['Things', usage.things],
        ['Events stored today', usage.events_stored_today],
        ['Events stored this month', usage.events_stored_this_month],
      ]) {
        await page
          .getByRole('figure', { name, exact: true })
          .filter({ hasText: new RegExp(`^${value}$`) })
          .waitFor();
      }
      await page
        .getByRole('figure', { name: 'API requests today', exact: true })
        .filter({ hasText: /^\d+$/ })
        .waitFor();
      await page.getByRole('figure', { name: 'Storage', exact: true }).filter({ hasText: /\d/ }).waitFor();
      // Limits are said in words below the figures: none of its own, and the server sets none per
      // organisation, but one per key pair.
      await page
        .getByText('Events limit: none: no limit of its own, and the server sets none.', { exact: true })
        .waitFor();
      await page
        .getByText(`Events limit per key pair: ${PER_KEY_PAIR} events a second each, set by the server.`, {
          exact: true,
        })
        .waitFor();
      assert.equal(await page.getByRole('figure', { name: 'Events limit', exact: true }).count(), 0);
      await page
        .getByRole('figure', { name: 'Events refused by a limit today', exact: true })
        .filter({ hasText: new RegExp(`^${usage.events_limited_today}$`) })
        .waitFor();
      await page.getByLabel('Retention (days)', { exact: true }).fill('30');
      await page.getByLabel('Rollup retention (days)', { exact: true }).fill('400');
      await button(page, 'Save').click();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      const caller = (await api.request('GET', '/api/v3/caller', { token })).body.caller;
      const own = (await api.request('GET', `/api/v3/organisations/${caller.organisation_key}`, { token })).body
        .organisation;
      assert.deepEqual([own.retention_days, own.rollup_retention_days], [30, 400]);
      await page.getByLabel('Rollup retention (days)', { exact: true }).fill('');
      await button(page, 'Save').click();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      const kept = (await api.request('GET', `/api/v3/organisations/${caller.organisation_key}`, { token })).body
        .organisation;
      assert.deepEqual([kept.retention_days, kept.rollup_retention_days], [30, null], 'empty keeps for ever');
      await shot(page, 'settings');
      await assertAccessible(page, 'the settings page');
      await page.close();
    });

    it("when an OEM admin limits a child's events a second then the API holds it, and an empty field gives back the server's default", async () => {
      const page = await signedIn('/console/organisations');
      await page.getByRole('heading', { level: 1, name: 'Organisations', exact: true }).waitFor();
      const name = unique('Limited');
      await button(page, 'New organisation').click();
      await page.getByLabel('Name', { exact: true }).fill(name);
      await button(page, 'Create').click();
      await row(page, name).getByRole('cell', { name: "the server's", exact: true }).waitFor();
      const stored = async () =>
        (
          (await api.request('GET', '/api/v3/organisations', { token, query: { per: 100 } })).body.organisations as {
            name: string;
            events_per_second: number | null;
          }[]
        ).find((o) => o.name === name)?.events_per_second;
      await button(page, `Limit events of ${name}`).click();
      const form = page.getByRole('form', { name: `Events a second of ${name}`, exact: true });
      await form.getByLabel('Events a second', { exact: true }).fill('250');
      await assertAccessible(page, 'the organisations page with a limit being set');
      await shot(page, 'organisation-events-limit');
      await form.getByRole('button', { name: 'Save', exact: true }).click();
      await row(page, name).getByRole('cell', { name: '250 a second', exact: true }).waitFor();
      assert.equal(await stored(), 250);
      await button(page, `Limit events of ${name}`).click();
      await form.getByLabel('Events a second', { exact: true }).fill('');
      await form.getByRole('button', { name: 'Save', exact: true }).click();
      await row(page, name).getByRole('cell', { name: "the server's", exact: true }).waitFor();
      assert.equal(await stored(), null);

      // The child sees the limit its parent set, and what it refused today, on its Settings page.
      await button(page, `Limit events of ${name}`).click();
      await form.getByLabel('Events a second', { exact: true }).fill('120');
      await form.getByRole('button', { name: 'Save', exact: true }).click();
      await row(page, name).getByRole('cell', { name: '120 a second', exact: true }).waitFor();
      await button(page, `Sign in to ${name}`).click();
      const dialog = page.getByRole('dialog', { name: `Sign in to ${name}`, exact: true });
      await dialog.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await dialog.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByText(`${ADMIN_EMAIL} · ${name}`, { exact: true }).waitFor();
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings', exact: true }).click();
      const figure = (figureName: string) => page.getByRole('figure', { name: figureName, exact: true });
      await page
        .getByText('Events limit: 120 events a second, set by its parent organisation.', { exact: true })
        .waitFor();
      await page
        .getByText(`Events limit per key pair: ${PER_KEY_PAIR} events a second each, set by the server.`, {
          exact: true,
        })
        .waitFor();
      await figure('Events refused by a limit today').filter({ hasText: /^0$/ }).waitFor();
      await shot(page, 'child-events-limit');
      await page.close();
    });

    it('when a role may only read users, roles and API keys then no write control is offered, and pages it may not read show the API refusal', async () => {
      const reader = await userWithAbilities(api, token, [61, 71, 141]);
      const page = await signedIn('/console/users', reader.email, reader.password);
      await row(page, ADMIN_EMAIL).waitFor();
      const navigation = page.getByRole('navigation', { name: 'Main' });
      const links = await navigation.getByRole('link').allTextContents();
      assert.deepEqual(links, ['API keys', 'Users', 'Roles'], 'no Dashboards without dashboard read');
      const writeControls = () =>
        page
          .getByRole('button', { name: /^(New |Delete|Edit|Save|Create)/ })
          .or(page.getByRole('combobox', { name: /^Role of / }));
      assert.equal(await writeControls().count(), 0);
      await navigation.getByRole('link', { name: 'Roles', exact: true }).click();
      await row(page, 'Account Admin').waitFor();
      assert.equal(await writeControls().count(), 0);
      await navigation.getByRole('link', { name: 'API keys', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'API keys', exact: true }).waitFor();
      await page.getByRole('heading', { name: 'No API keys yet', exact: true }).waitFor();
      assert.equal(await page.getByRole('table', { name: 'API keys' }).count(), 0, 'no table of nothing');
      assert.equal(await writeControls().count(), 0);
      await shot(page, 'read-only-api-keys');

      for (const [path, endpoint] of [
        ['/console/organisations', '/api/v3/organisations'],
        ['/console/alerts', '/api/v3/alerts'],
      ] as const) {
        await page.goto(`${api.url}${path}`);
        const refused = await api.request('GET', endpoint, { token: reader.token });
        assert.equal(refused.status, 403, endpoint);
        await page.getByRole('alert').filter({ hasText: refused.body.message }).first().waitFor();
      }
      assert.equal(await button(page, 'New organisation').count(), 0);
      await shot(page, 'read-only-refused');
      await page.close();
    });

    it("when Tab is first pressed on a page then Skip to content is the first stop, shown, and it takes the focus to the page's heading past the navigation", async () => {
      const page = await signedIn('/console/users');
      await page.getByRole('heading', { level: 1, name: 'Users', exact: true }).waitFor();
      // As a user arrives: a page loaded afresh, nothing focused yet.
      await page.goto(`${api.url}/console/users`);
      await row(page, ADMIN_EMAIL).waitFor();
      await page.keyboard.press('Tab');
      const skip = page.getByRole('link', { name: 'Skip to content', exact: true });
      assert.equal(await isFocused(skip), true, 'the first Tab stop');
      const shown = await skip.boundingBox();
      assert.ok(shown && shown.width > 40 && shown.height > 16, `shown while focused: ${JSON.stringify(shown)}`);
      await assertAccessible(page, 'a page with its skip link focused');
      await shot(page, 'skip-link');
      await page.keyboard.press('Enter');
      await assertHeadingFocused(page, 'Users');
      await page.keyboard.press('Tab');
      assert.equal(await isFocused(button(page, 'New user')), true, "the next Tab stop is the page's first control");
      await page.close();
    });

    it('when Skip to content is used from the keyboard on a page scrolled down then its heading takes the focus and is scrolled into view', async () => {
      const page = await signedIn('/console/audit-trail');
      await page.getByRole('heading', { level: 1, name: 'Audit trail', exact: true }).waitFor();
      // A short window, so that the trail of the tests before reaches far below it; loaded afresh, nothing focused.
      await page.setViewportSize({ width: 1280, height: 480 });
      await page.goto(`${api.url}/console/audit-trail`);
      const heading = page.getByRole('heading', { level: 1, name: 'Audit trail', exact: true });
      await heading.waitFor();
      await page.waitForLoadState('networkidle');
      await page.keyboard.press('Tab');
      const skip = page.getByRole('link', { name: 'Skip to content', exact: true });
      assert.equal(await isFocused(skip), true, 'the first Tab stop');
      // Read on down the page (the wheel, a screen reader's reading) with the link still focused.
      await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
      const scrolled = await page.evaluate<number>('window.scrollY');
      assert.ok(scrolled > 240, `the page scrolled ${scrolled} px only`);
      await page.keyboard.press('Enter');
      await assertHeadingFocused(page, 'Audit trail');
      const box = await heading.boundingBox();
      assert.ok(box);
      assert.ok(box.y >= 0 && box.y + box.height <= 480, `the focused heading is at ${box.y} px, out of view`);
      await shot(page, 'skip-link-scrolled');
      await page.close();
    });

    it('when another page is chosen in the navigation then the focus goes to its heading, also for a page still loading and after Back', async () => {
      const page = await signedIn('/console/users');
      await page.getByRole('heading', { level: 1, name: 'Users', exact: true }).waitFor();
      const navigation = page.getByRole('navigation', { name: 'Main' });
      await navigation.getByRole('link', { name: 'Roles', exact: true }).click();
      await assertHeadingFocused(page, 'Roles');
      // Key pairs' code is downloaded when first opened: its heading comes after the change of page.
      await navigation.getByRole('link', { name: 'Key pairs', exact: true }).click();
      await assertHeadingFocused(page, 'Key pairs');
      await page.keyboard.press('Tab');
      assert.equal(await isFocused(button(page, 'New key pair')), true, 'Tab continues from the top of the page');
      await page.goBack();
      await assertHeadingFocused(page, 'Roles');
      await page.close();
    });

    it('then no page reported a Content-Security-Policy refusal or an uncaught error', () => {
      assert.deepEqual(problems.flat(), []);
    });
  });
}
