/**
 * The console's rule form in a real browser against a real server (docs/console.md, "Using it",
 * Rules): Edit fills the form with the rule's own fields, and Save writes exactly what the form shows,
 * including no alert, no template, an empty message and, for a no_data rule, no condition.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot, watchProblems } from '../support/browser.ts';
import { openConsole } from '../support/console-session.ts';
import { createThing, userWithAbilities } from '../support/fixtures.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

for (const store of STORES) {
  describe(`the console's rule form [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let page: Page;
    let problems: string[];
    let token: string;
    const shot = (name: string) => screenshot(page, `${store.name}-rules-${name}`);

    before(async () => {
      [api, browser] = await Promise.all([startServer(store), launchBrowser()]);
      token = await api.adminToken();
      page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      problems = watchProblems(page);
      await page.goto(`${api.url}/console/rules`);
      await page.getByLabel('Email', { exact: true }).fill(ADMIN_EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Rules', exact: true }).waitFor();
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function createRule(rule: Record<string, unknown>) {
      const created = await api.request('POST', '/api/v3/rules', { token, body: { rule } });
      assert.equal(created.status, 200, created.text);
      return created.body.rule as { rule_key: string; name: string };
    }

    async function storedRule(ruleKey: string) {
      const found = await api.request('GET', `/api/v3/rules/${ruleKey}`, { token });
      assert.equal(found.status, 200, found.text);
      return found.body.rule;
    }

    /** The rules page, loaded again so that it lists the rules made through the API. */
    async function openRules() {
      await page.goto(`${api.url}/console/rules`);
      await page.getByRole('table', { name: 'Rules' }).waitFor();
    }

    /** Presses Save on the form and waits for it to close: the API has answered the change. */
    async function save(formName: string) {
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('form', { name: formName, exact: true }).waitFor({ state: 'detached' });
    }

    const field = (label: string) => page.getByLabel(label, { exact: true });
    const selectedOption = (label: string, name: string) =>
      field(label).getByRole('option', { name, exact: true, selected: true });

    it('when Edit of one rule is pressed and then Edit of another then the form holds the second rule and Save keeps both rules their own fields', async () => {
      const first = await createRule({
        name: 'A too hot',
        condition: 'temperature > 100',
        alert_type: 3,
        alert_message: 'A hot',
      });
      const second = await createRule({
        name: 'B low pressure',
        condition: 'pressure < 1',
        alert_type: 1,
        alert_message: 'B low',
      });
      await openRules();
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'A too hot' }).click();
      await page.getByRole('form', { name: 'Edit A too hot', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'B low pressure' }).click();
      await page.getByRole('heading', { name: 'Edit B low pressure', exact: true }).waitFor();
      assert.equal(await field('Name').inputValue(), 'B low pressure');
      assert.equal(await field('Condition').inputValue(), 'pressure < 1');
      assert.equal(await field('Alert message').inputValue(), 'B low');
      await selectedOption('Alert type', 'Warning').waitFor({ state: 'attached' });
      await shot('edit-second');
      await field('Name').fill('B pressure too low');
      await save('Edit B low pressure');

      const b = await storedRule(second.rule_key);
      assert.deepEqual(
        { name: b.name, condition: b.condition, alert_type: b.alert_type, alert_message: b.alert_message },
        { name: 'B pressure too low', condition: 'pressure < 1', alert_type: 1, alert_message: 'B low' },
      );
      const a = await storedRule(first.rule_key);
      assert.deepEqual(
        { name: a.name, condition: a.condition, alert_type: a.alert_type, alert_message: a.alert_message },
        { name: 'A too hot', condition: 'temperature > 100', alert_type: 3, alert_message: 'A hot' },
      );
    });

    it('when a rule that raises no alert is edited then Alert type shows None and saving keeps it raising none', async () => {
      const quiet = await createRule({ name: 'C webhook only', condition: 'flow > 5', alert_type: null });
      await openRules();
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'C webhook only' }).click();
      await selectedOption('Alert type', 'None').waitFor({ state: 'attached' });
      await shot('edit-no-alert');
      await field('Name').fill('C webhook only, renamed');
      await save('Edit C webhook only');
      const stored = await storedRule(quiet.rule_key);
      assert.equal(stored.name, 'C webhook only, renamed');
      assert.equal(stored.alert_type, null);
    });

    it('when a rule is given Alert type None with Edit then it raises no alert from then on', async () => {
      const loud = await createRule({ name: 'F loud', condition: 'noise > 90', alert_type: 2, alert_message: 'loud' });
      await openRules();
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'F loud' }).click();
      await field('Alert type').selectOption({ label: 'None' });
      await save('Edit F loud');
      assert.equal((await storedRule(loud.rule_key)).alert_type, null);
    });

    it('when the template and the alert message of a rule are removed with Edit then the rule keeps neither', async () => {
      const template = await api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: 'Boilers' } },
      });
      assert.equal(template.status, 200, template.text);
      const scoped = await createRule({
        name: 'D scoped',
        condition: 'level > 1',
        alert_type: 0,
        alert_message: 'D message',
        thing_template_key: template.body.thing_template.thing_template_key,
      });
      await openRules();
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'D scoped' }).click();
      await selectedOption('Template', 'Boilers').waitFor({ state: 'attached' });
      await field('Template').selectOption({ label: 'None' });
      await field('Alert message').fill('');
      await save('Edit D scoped');
      const stored = await storedRule(scoped.rule_key);
      assert.equal(stored.thing_template_key, null);
      assert.equal(stored.alert_message, '');
      assert.equal(stored.condition, 'level > 1');
    });

    it('when a no_data rule without a condition is edited then it is saved with no condition', async () => {
      const silent = await createRule({
        name: 'E silent',
        trigger: 'no_data',
        for_seconds: 600,
        alert_type: 2,
        alert_message: 'silent',
      });
      await openRules();
      // The list says when it fires, where another rule shows its condition.
      const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'E silent', exact: true }) });
      assert.equal(await row.locator('td[data-label="Condition"]').textContent(), 'Nothing sent for 10 min');
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'E silent' }).click();
      assert.equal(await field('Condition').inputValue(), '');
      await field('Name').fill('E silent, renamed');
      await shot('edit-no-data');
      await save('Edit E silent');
      const stored = await storedRule(silent.rule_key);
      assert.equal(stored.name, 'E silent, renamed');
      assert.equal(stored.trigger, 'no_data');
      assert.equal(stored.condition, '');
      assert.equal(stored.for_seconds, 600);
    });

    it('when a rule is made with every field of the form then Save writes each, and Delete removes it after asking', async () => {
      await createThing(api, token, { name: 'Kiln 4', thing_key: 'kiln-4' });
      const group = await api.request('POST', '/api/v3/groups', {
        token,
        body: { group: { name: 'Hall C', group_type: 1, thing_keys: [] } },
      });
      assert.equal(group.status, 200, group.text);
      await openRules();
      await page.getByRole('button', { name: 'New rule', exact: true }).click();
      await field('Name').fill('G kiln too hot');
      await field('Description').fill('for the night shift');
      await field('Condition').fill('temperature > 900');
      await field('Group').selectOption({ label: 'Hall C' });
      await field('Add thing').fill('Kiln');
      await page.getByRole('option', { name: /Kiln 4/ }).click();
      await page.getByRole('list', { name: 'Things listed', exact: true }).getByText('Kiln 4').waitFor();
      await field('Trigger').selectOption({ label: 'When the condition turns true' });
      await field('For (seconds)').fill('300');
      await field('Alert type').selectOption({ label: 'Critical' });
      await page.getByRole('checkbox', { name: 'Clear automatically', exact: true }).check();
      await page.getByRole('checkbox', { name: 'Enabled', exact: true }).uncheck();
      await shot('new-every-field');
      await save('New rule');
      const listed = await api.request('GET', '/api/v3/rules', { token, query: { search: 'G kiln', per: 10 } });
      const made = listed.body.rules[0];
      assert.deepEqual(
        {
          description: made.description,
          condition: made.condition,
          group_key: made.group_key,
          thing_keys: made.thing_keys,
          trigger: made.trigger,
          for_seconds: made.for_seconds,
          alert_type: made.alert_type,
          auto_clear: made.auto_clear,
          enabled: made.enabled,
        },
        {
          description: 'for the night shift',
          condition: 'temperature > 900',
          group_key: group.body.group.group_key,
          thing_keys: ['kiln-4'],
          trigger: 'on_enter',
          for_seconds: 300,
          alert_type: 3,
          auto_clear: true,
          enabled: false,
        },
      );
      // Edit shows them again; a no_data trigger asks for the silence.
      await openRules();
      await page.getByRole('button', { name: 'Edit', exact: true, description: 'G kiln too hot' }).click();
      await selectedOption('Group', 'Hall C').waitFor({ state: 'attached' });
      assert.equal(await field('For (seconds)').inputValue(), '300');
      assert.equal(await page.getByRole('checkbox', { name: 'Enabled', exact: true }).isChecked(), false);
      await field('Trigger').selectOption({ label: 'When a thing sends nothing' });
      await field('For (seconds)').fill('900');
      await page.getByRole('button', { name: 'Remove', exact: true, description: 'kiln-4' }).click();
      await save('Edit G kiln too hot');
      const edited = await storedRule(made.rule_key);
      assert.equal(edited.trigger, 'no_data');
      assert.equal(edited.for_seconds, 900);
      assert.deepEqual(edited.thing_keys, []);
      await openRules();
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'G kiln too hot' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete G kiln too hot?', exact: true });
      await dialog.waitFor();
      await shot('delete');
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('cell', { name: 'G kiln too hot', exact: true }).waitFor({ state: 'detached' });
      const gone = await api.request('GET', `/api/v3/rules/${made.rule_key}`, { token });
      assert.equal(gone.status, 404);
    });

    it('when a rule with a bad condition is saved then the refusal is said once, under the condition, and the alert message says its placeholders', async () => {
      await openRules();
      await page.getByRole('button', { name: 'New rule', exact: true }).click();
      const form = page.getByRole('form', { name: 'New rule', exact: true });
      const hint = await field('Alert message').evaluate(
        (input) => input.ownerDocument.getElementById(input.getAttribute('aria-describedby') ?? '')?.textContent ?? '',
      );
      for (const placeholder of ['{{temperature}}', '{{machine.temp}}', '{{thing.name}}', '{{thing.thing_key}}']) {
        assert.ok(hint.includes(placeholder), `the hint names ${placeholder}: ${hint}`);
      }
      await field('Name').fill('Bad condition');
      await field('Condition').fill('temperature >> 80');
      const checked = await api.request('POST', '/api/v3/expressions/validate', {
        token,
        body: { expression: 'temperature >> 80', kind: 'rule' },
      });
      assert.equal(checked.status, 400);
      // The check's words as a sentence, without the field's name the API's whole message starts with.
      assert.match(checked.body.message, /^expression unexpected '>'/);
      const said = `U${checked.body.errors[0].message.slice(1)}`;
      await form.getByRole('alert').filter({ hasText: said }).waitFor();
      assert.equal(await form.getByText(/expression unexpected/).count(), 0);
      const refused = page.waitForResponse(
        (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/api/v3/rules',
      );
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      assert.equal((await refused).status(), 400);
      // The answer is shown by the next frame; the form stays open with one message about the condition.
      await page.waitForTimeout(200);
      assert.equal(await form.getByText(/unexpected '>'/i).count(), 1, 'the condition is said once');
      assert.equal(await form.getByText(/rule\.condition/).count(), 0);
      assert.equal(await field('Condition').getAttribute('aria-invalid'), 'true');
      await shot('bad-condition');

      // Saved before the check has answered: still said once, under the field, whichever comes last.
      await field('Condition').fill('temperature > > 80');
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.waitForTimeout(600);
      assert.equal(await form.getByText(/unexpected '>'/i).count(), 1, 'the condition is said once');
      assert.equal(await form.getByRole('alert').count(), 1);
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    });

    it('when a condition names a metric the chosen template lacks then the hint under it says which, with the metrics it has, and says it no more once the name is right', async () => {
      const made = await api.request('POST', '/api/v3/thing_templates', {
        token,
        body: {
          thing_template: {
            name: 'Kiln template',
            metrics: [
              { name: 'temperature', data_type: 'number' },
              { name: 'machine.status', data_type: 'string' },
            ],
          },
        },
      });
      assert.equal(made.status, 200, made.text);
      await openRules();
      await page.getByRole('button', { name: 'New rule', exact: true }).click();
      const hint = () =>
        field('Condition').evaluate(
          (input) =>
            input.ownerDocument.getElementById(input.getAttribute('aria-describedby')?.split(' ')[0] ?? '')
              ?.textContent ?? '',
        );
      await field('Condition').fill("temperatur > 80 and machine.status == 'on' and thing.name != ''");
      await page.getByText('The condition is valid.', { exact: true }).waitFor();
      assert.equal(await hint(), 'The condition is valid.', 'without a template nothing is said of metrics');
      await field('Template').selectOption({ label: 'Kiln template' });
      await page.getByText("has no metric 'temperatur'").waitFor();
      assert.equal(
        await hint(),
        "The condition is valid, but the template Kiln template has no metric 'temperatur', so its things' events never meet it (its metrics: temperature, machine.status).",
      );
      await shot('condition-metric-missing');
      await field('Condition').fill("temperature > 80 and machine.status == 'on'");
      await page.getByText("has no metric 'temperatur'").waitFor({ state: 'detached' });
      assert.equal(await hint(), 'The condition is valid.');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    });

    it('when a role may read rules but not change them then it is offered Notifications only if it may read actions', async () => {
      const created = await api.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'Seen by readers', condition: 'temperature > 1' } },
      });
      assert.equal(created.status, 200, created.text);
      for (const [abilities, notifications] of [
        [[31], 0],
        [[31, 111], 1],
      ] as const) {
        const reader = await userWithAbilities(api, token, [...abilities]);
        const their = await openConsole(browser, api.url, 'rules', 'Rules', reader);
        try {
          await their.page.getByRole('cell', { name: 'Seen by readers', exact: true }).waitFor();
          const row = their.page.getByRole('row').filter({ hasText: 'Seen by readers' });
          assert.equal(
            await row.getByRole('button', { name: 'Notifications of Seen by readers', exact: true }).count(),
            notifications,
          );
          assert.equal(
            await row.getByRole('button', { name: 'Edit', exact: true, description: 'Seen by readers' }).count(),
            0,
          );
          assert.equal(
            await their.page.getByRole('columnheader', { name: 'Actions', exact: true }).count(),
            notifications,
            'an Actions column only with an action in it',
          );
          assert.deepEqual(their.problems, []);
        } finally {
          await their.close();
        }
      }
    });

    it('when the rule form has been used then the page reported no uncaught error and no refusal', () => {
      assert.deepEqual(problems, []);
    });
  });
}
