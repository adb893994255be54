/**
 * The console's forms in a real browser against a real server (docs/console.md, "Pages"): when the API
 * refuses a form, what it says about a field (`thing.name`, `gateway.adapters.0.configuration`) is said
 * under that field in plain words, as the field's description, the field marked invalid; what names no
 * field of the form is said next to its button.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { assertAccessible } from '../support/axe.ts';
import { browserSkip, descriptionOf, launchBrowser, screenshot } from '../support/browser.ts';
import { type ConsolePage, openConsole } from '../support/console-session.ts';
import { childOrganisation, createRole, defaultTemplateKey, userWithAbilities } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

/** A name one character longer than the API takes (200). */
const LONG_NAME = 'N'.repeat(201);
const TOO_LONG = 'Use at most 200 characters.';

for (const store of STORES) {
  describe(`the console's refusals field by field [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let token: string;
    let admin: ConsolePage;

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      admin = await openConsole(browser, api.url, 'overview', 'Overview');
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    /** The admin's console at `path`, once its heading `heading` shows. */
    async function open(path: string, heading: string): Promise<Page> {
      await admin.page.goto(`${api.url}/console/${path}`);
      await admin.page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
      return admin.page;
    }

    /** The params the API names in refusing `body`, each with its message. */
    async function refusal(method: string, path: string, body: object): Promise<Record<string, string>> {
      const answer = await api.request(method, path, { token, body });
      assert.ok(answer.status >= 400, `${path} refuses ${JSON.stringify(body)}`);
      return Object.fromEntries(
        (answer.body.errors as { param: string; message: string }[]).map((e) => [e.param, e.message]),
      );
    }

    /** The line next to a form's button: its alerts that are not about one field. */
    const line = (form: Locator) => form.locator('p[role="alert"]');

    /**
     * Sends `form` with its button `submit` and, once the API has refused it (`sent`: else the form
     * refuses it itself), each of `said` (a field, what is said under it) has that message as its
     * description and is marked invalid, and the line next to the button says none of it.
     */
    async function expectSaid(form: Locator, submit: string, said: [Locator, string][], sent = true): Promise<void> {
      // A form's refusal, not the 200 of a check as it is typed (`POST /api/v3/expressions/validate`).
      const refused = sent
        ? form
            .page()
            .waitForResponse((r) => ['POST', 'PUT'].includes(r.request().method()) && r.status() >= 400, {
              timeout: 10_000,
            })
            .catch(() => assert.fail('the API refuses nothing'))
        : undefined;
      await form.getByRole('button', { name: submit, exact: true }).click();
      await refused;
      // What an earlier refusal said went as this one was sent: what is said now is about this one.
      await form
        .getByRole('alert')
        .first()
        .waitFor({ timeout: 10_000 })
        .catch(() => assert.fail('the refusal is said nowhere in the form'));
      for (const [field, message] of said) {
        assert.equal(await descriptionOf(field), message, "the message is the field's description");
        assert.equal(await field.getAttribute('aria-invalid'), 'true', `the field said "${message}" is marked invalid`);
        assert.equal(
          await line(form).filter({ hasText: message }).count(),
          0,
          'the line by the button says none of it',
        );
      }
      assert.equal(await form.getByRole('alert').count(), said.length, 'one message a field, and nothing else');
    }

    /** The rule of a key in words, as the API gives it, made a sentence. */
    const KEY_RULE = 'Must be 1-64 characters of A-Za-z0-9._-.';

    it('when a thing is refused then the name and the key are each said under their field, and a field put right is no longer marked', async () => {
      assert.deepEqual(
        await refusal('POST', '/api/v3/things', {
          thing: { name: LONG_NAME, thing_key: 'not a key!', thing_template_key: await defaultTemplateKey(api, token) },
        }),
        {
          'thing.thing_key': 'must be 1-64 characters of A-Za-z0-9._-',
          'thing.name': 'must NOT have more than 200 characters',
        },
      );
      const page = await open('things', 'Things');
      await page.getByRole('button', { name: 'New thing', exact: true }).click();
      const form = page.getByRole('form', { name: 'New thing', exact: true });
      const name = form.getByLabel('Name', { exact: true });
      const key = form.getByLabel('Key', { exact: true });
      await name.fill(LONG_NAME);
      await key.fill('not a key!');
      await expectSaid(form, 'Create', [
        [name, TOO_LONG],
        [key, KEY_RULE],
      ]);
      assert.equal(
        await page.getByText('must NOT have more than', { exact: false }).count(),
        0,
        "the API's words are not shown",
      );
      assert.equal(await name.inputValue(), LONG_NAME, 'the form keeps what was typed');

      await name.fill('Boiler 7');
      await expectSaid(form, 'Create', [[key, KEY_RULE]]);
      assert.equal(await name.getAttribute('aria-invalid'), null);
      assert.equal(await descriptionOf(name), '');
    });

    it("when a template is refused then its name and a metric's unit are each said under their field", async () => {
      const page = await open('templates', 'Templates');
      await page.getByRole('button', { name: 'New template', exact: true }).first().click();
      const form = page.getByRole('form', { name: 'New template', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await form.getByRole('button', { name: 'Add metric', exact: true }).click();
      await form.getByRole('button', { name: 'Add metric', exact: true }).click();
      const metric = (n: number) => form.getByRole('group', { name: `Metric ${n}`, exact: true });
      await metric(1).getByLabel('Metric name', { exact: true }).fill('temperature');
      await metric(2).getByLabel('Metric name', { exact: true }).fill('pressure');
      await metric(2).getByLabel('Unit', { exact: true }).fill('U'.repeat(51));
      await expectSaid(form, 'Save', [
        [form.getByLabel('Name', { exact: true }), TOO_LONG],
        [metric(2).getByLabel('Unit', { exact: true }), 'Use at most 50 characters.'],
      ]);
      assert.equal(await metric(1).getByLabel('Unit', { exact: true }).getAttribute('aria-invalid'), null);
      await assertAccessible(page, 'the template form with a refusal');
      await screenshot(page, `${store.name}-field-errors-template`);
    });

    it('when a group is refused then its name and description are each said under their field', async () => {
      const page = await open('groups', 'Groups');
      await page.getByRole('button', { name: 'New group', exact: true }).click();
      const form = page.getByRole('form', { name: 'New group', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await form.getByLabel('Description', { exact: true }).fill('D'.repeat(2001));
      await expectSaid(form, 'Save', [
        [form.getByLabel('Name', { exact: true }), TOO_LONG],
        [form.getByLabel('Description', { exact: true }), 'Use at most 2000 characters.'],
      ]);
    });

    it('when a role is refused then its name is said under it, and abilities the user may not grant are not offered', async () => {
      const page = await open('roles', 'Roles');
      await page.getByRole('button', { name: 'New role', exact: true }).click();
      const form = page.getByRole('form', { name: 'New role', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await form.getByRole('checkbox', { name: 'thing read', exact: true }).check();
      await expectSaid(form, 'Save', [[form.getByLabel('Name', { exact: true }), TOO_LONG]]);

      // A user who may make roles but not delete things cannot grant `thing delete`: the API refuses it
      // (`role.abilities`), and the form offers it greyed out.
      const maker = await userWithAbilities(api, token, [61, 62]);
      const refused = await api.request('POST', '/api/v3/roles', {
        token: maker.token,
        body: { role: { name: 'Deleters', abilities: [14] } },
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.errors[0].param, 'role.abilities');
      const limited = await openConsole(browser, api.url, 'roles', 'Roles', maker);
      try {
        await limited.page.getByRole('button', { name: 'New role', exact: true }).click();
        const their = limited.page.getByRole('form', { name: 'New role', exact: true });
        const box = (name: string) => their.getByRole('checkbox', { name, exact: true });
        assert.ok(await box('thing delete').isDisabled(), 'an ability the user lacks is not offered');
        assert.ok(await box('all all').isDisabled());
        assert.ok(await box('role read').isEnabled(), 'one the user holds is');
        await their.getByText('Greyed out: abilities your own role lacks, which you cannot grant.').waitFor();
        await screenshot(limited.page, `${store.name}-field-errors-role-withheld`);
        await their.getByLabel('Name', { exact: true }).fill('Role readers');
        await box('role read').check();
        await their.getByRole('button', { name: 'Save', exact: true }).click();
        await limited.page.getByRole('cell', { name: 'Role readers', exact: true }).waitFor();
        assert.deepEqual(limited.problems, []);
      } finally {
        await limited.close();
      }
    });

    it('when a user may make users then New user offers greyed out the roles granting more than its own', async () => {
      const readers = await createRole(api, token, [61]);
      const hiring = await userWithAbilities(api, token, [61, 71, 72]);
      const limited = await openConsole(browser, api.url, 'users', 'Users', hiring);
      try {
        await limited.page.getByRole('button', { name: 'New user', exact: true }).click();
        const role = limited.page
          .getByRole('form', { name: 'New user', exact: true })
          .getByLabel('Role', { exact: true });
        const option = (name: string) => role.locator('option', { hasText: name });
        assert.ok(await option('Account Admin').isDisabled(), "Account Admin is only an account admin's to give");
        assert.equal(await option('Account Admin').textContent(), 'Account Admin (more than your role may give)');
        assert.ok(await option('Agent').isDisabled(), 'Agent grants things the user lacks');
        assert.ok(await option(readers.name).isEnabled(), "a role within the user's own is offered");
        assert.equal(await option(readers.name).textContent(), readers.name);
        await screenshot(limited.page, `${store.name}-field-errors-roles-beyond`);
        assert.deepEqual(limited.problems, []);
      } finally {
        await limited.close();
      }
    });

    it("when a gateway is refused then an adapter's configuration is said under that adapter's field", async () => {
      const page = await open('gateways', 'Gateways');
      await page.getByRole('button', { name: 'New gateway', exact: true }).click();
      const form = page.getByRole('form', { name: 'New gateway', exact: true });
      await form.getByLabel('Name', { exact: true }).fill('Plant 2 gateway');
      await form.getByRole('button', { name: 'Add adapter', exact: true }).click();
      await form.getByRole('button', { name: 'Add adapter', exact: true }).click();
      const adapter = (n: number) => form.getByRole('group', { name: `Adapter ${n}`, exact: true });
      await adapter(2).getByLabel('Configuration', { exact: true }).fill('{baud: 9600');
      assert.deepEqual(
        await refusal('POST', '/api/v3/gateway', {
          gateway: { name: 'Plant 2 gateway', adapters: [{}, { configuration: '{baud: 9600' }] },
        }),
        { 'gateway.adapters.1.configuration': 'is not valid JSON text' },
      );
      await expectSaid(form, 'Save', [
        [adapter(2).getByLabel('Configuration', { exact: true }), 'Is not valid JSON text.'],
      ]);
      assert.equal(await adapter(1).getByLabel('Configuration', { exact: true }).getAttribute('aria-invalid'), null);
      await screenshot(page, `${store.name}-field-errors-gateway`);
    });

    it('when an action is refused then a Headers that is not JSON, then the URL, is said under its field', async () => {
      const rule = await api.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'Kiln too hot', condition: 'temperature > 100', alert_type: 2 } },
      });
      assert.equal(rule.status, 200, rule.text);
      const page = await open('notification-actions', 'Notification actions');
      await page.getByRole('button', { name: 'New action', exact: true }).click();
      const form = page.getByRole('form', { name: 'New action', exact: true });
      await form.getByLabel('Type', { exact: true }).selectOption({ label: 'HTTP call' });
      await form.getByLabel('URL', { exact: true }).fill('ftp://example.com/hook');
      await form.getByLabel('Headers', { exact: true }).fill('{"X-Kiln": 1');
      // Refused by the form itself, before anything is sent.
      await expectSaid(
        form,
        'Save',
        [[form.getByLabel('Headers', { exact: true }), 'Must be a JSON object, such as {"name": "value"}.']],
        false,
      );
      await form.getByLabel('Headers', { exact: true }).fill('{"X-Kiln": "1"}');
      assert.deepEqual(
        await refusal('POST', '/api/v3/notification_actions', {
          notification_action: {
            type: 'CallHttpUrlAction',
            rule_key: rule.body.rule.rule_key,
            method: 'POST',
            url: 'ftp://example.com/hook',
          },
        }),
        { 'notification_action.url': 'must be an http or https URL' },
      );
      await expectSaid(form, 'Save', [[form.getByLabel('URL', { exact: true }), 'Must be an http or https URL.']]);
      assert.equal(await form.getByLabel('Headers', { exact: true }).getAttribute('aria-invalid'), null);
    });

    it('when a rule is refused then its name is said under it, marked invalid', async () => {
      const page = await open('rules', 'Rules');
      await page.getByRole('button', { name: 'New rule', exact: true }).first().click();
      const form = page.getByRole('form', { name: 'New rule', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await form.getByLabel('Condition', { exact: true }).fill('temperature > 90');
      await expectSaid(form, 'Save', [[form.getByLabel('Name', { exact: true }), TOO_LONG]]);
    });

    it('when an API key is refused then its name, then its expiry, is said under its field', async () => {
      const page = await open('api-keys', 'API keys');
      await page.getByRole('button', { name: 'New API key', exact: true }).click();
      const form = page.getByRole('form', { name: 'New API key', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await expectSaid(form, 'Create', [[form.getByLabel('Name', { exact: true }), TOO_LONG]]);
      await form.getByLabel('Name', { exact: true }).fill('Nightly export');
      await form.getByLabel('Expires', { exact: true }).fill('2001-01-01T00:00');
      await expectSaid(form, 'Create', [[form.getByLabel('Expires', { exact: true }), 'Must be in the future.']]);
    });

    it('when a key pair is refused then its name is said under it', async () => {
      const page = await open('key-pairs', 'Key pairs');
      await page.getByRole('button', { name: 'New key pair', exact: true }).click();
      const form = page.getByRole('form', { name: 'New key pair', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await expectSaid(form, 'Create', [[form.getByLabel('Name', { exact: true }), TOO_LONG]]);
    });

    it("when an organisation, or a child's events a second, is refused then it is said under its field", async () => {
      const child = await childOrganisation(api, token);
      const page = await open('organisations', 'Organisations');
      await page.getByRole('button', { name: 'New organisation', exact: true }).click();
      const form = page.getByRole('form', { name: 'New organisation', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await expectSaid(form, 'Create', [[form.getByLabel('Name', { exact: true }), TOO_LONG]]);
      await form.getByRole('button', { name: 'Cancel', exact: true }).click();

      const listed = await api.request('GET', `/api/v3/organisations/${child.organisationKey}`, { token });
      const name = listed.body.organisation.name as string;
      await page.getByRole('button', { name: `Limit events of ${name}`, exact: true }).click();
      const limit = page.getByRole('form', { name: `Events a second of ${name}`, exact: true });
      await limit.getByLabel('Events a second', { exact: true }).fill('10000001');
      await expectSaid(limit, 'Save', [
        [limit.getByLabel('Events a second', { exact: true }), 'Use 10000000 or less.'],
      ]);
      await screenshot(page, `${store.name}-field-errors-events-limit`);
    });

    it("when the connect page's key pair is refused then its name is said under it, marked invalid", async () => {
      const page = await open('connect', 'Connect a device');
      const form = page.getByRole('form', { name: 'Create a key pair', exact: true });
      await form.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await expectSaid(form, 'Create key pair', [[form.getByLabel('Name', { exact: true }), TOO_LONG]]);
    });

    it('when an instruction is refused then its definition that is not JSON, then its name, is said under its field', async () => {
      const template = await defaultTemplateKey(api, token);
      const made = await api.request('POST', '/api/v3/things', {
        token,
        body: { thing: { name: 'Valve 3', thing_key: 'valve-3', thing_template_key: template, bi_directional: true } },
      });
      assert.equal(made.status, 200, made.text);
      const page = await open('things/valve-3', 'Valve 3');
      await page.getByRole('button', { name: 'Send instruction', exact: true }).click();
      const form = page.getByRole('form', { name: 'Send instruction', exact: true });
      const name = form.getByLabel('Instruction name', { exact: true });
      const definition = form.getByLabel('Definition', { exact: true });
      await name.fill(LONG_NAME);
      await definition.fill('{"valve": open}');
      // Refused by the form itself, before anything is sent.
      await expectSaid(form, 'Send', [[definition, 'The definition must be JSON, such as {"valve": "open"}.']], false);
      await definition.fill('{"valve": "open"}');
      await expectSaid(form, 'Send', [[name, TOO_LONG]]);
      assert.equal(await definition.getAttribute('aria-invalid'), null);
    });

    it('when the forms have been refused then the page reported no uncaught error and no refused script', () => {
      assert.deepEqual(admin.problems, []);
    });
  });
}
