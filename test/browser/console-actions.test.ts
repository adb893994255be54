/**
 * The console's Notification actions page in a real browser against a real server (docs/console.md,
 * "Pages"): actions of every kind made with the fields of their kind, a refusal shown
 * with the API's message, edited, their delivery attempts, deleted after confirming, and a role that
 * may only read offered no change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, descriptionOf, launchBrowser, screenshot } from '../support/browser.ts';
import { type ConsolePage, expectReadOnly, expectRefusedByUrl, openConsole } from '../support/console-session.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { unique, userWithAbilities } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

for (const store of STORES) {
  describe(`the console's Notification actions page [${store.name}]`, { skip: browserSkip || store.skip }, () => {
    let api: TestServer;
    let browser: Browser;
    let admin: ConsolePage;
    let page: Page;
    let token: string;
    let ruleKey: string;
    const shot = (name: string) => screenshot(page, `${store.name}-actions-${name}`);
    const field = (label: string) => page.getByLabel(label, { exact: true });

    before(async () => {
      // Deliveries to a closed loopback port fail at once: an attempt to show.
      [api, browser] = await Promise.all([
        startServer(store, { env: { ALLOW_PRIVATE_WEBHOOKS: 'true' } }),
        launchBrowser(),
      ]);
      token = await api.adminToken();
      const rule = await api.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'Kiln too hot', condition: 'temperature > 100', alert_type: 2, alert_message: 'hot' } },
      });
      assert.equal(rule.status, 200, rule.text);
      ruleKey = rule.body.rule.rule_key;
      admin = await openConsole(browser, api.url, 'notification-actions', 'Notification actions');
      page = admin.page;
    });
    after(async () => {
      await browser?.close();
      await api?.close();
    });

    async function storedActions() {
      const list = await api.request('GET', `/api/v3/notification_actions?rule_key=${ruleKey}`, { token });
      assert.equal(list.status, 200, list.text);
      return list.body.notification_actions as Record<string, unknown>[];
    }
    async function save(formName: string) {
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('form', { name: formName, exact: true }).waitFor({ state: 'detached' });
    }

    it('when the Type list is opened then it offers every kind the API has', async () => {
      await page.getByRole('heading', { name: 'No actions for this rule', exact: true }).waitFor();
      await page.getByRole('button', { name: 'New action', exact: true }).click();
      const kinds = await Promise.all(
        (await field('Type').locator('option').all()).map((option) => option.getAttribute('value')),
      );
      assert.deepEqual(kinds.sort(), [
        'CallHttpUrlAction',
        'EmailNotificationAction',
        'SMSNotificationAction',
        'ThingUserDefinedPropertiesAction',
      ]);
    });

    it('when an e-mail action is made then the API holds its To and Subject', async () => {
      await field('Type').selectOption({ label: 'E-mail' });
      await field('To').fill('ops@example.com, night@example.com');
      await field('Subject').fill('Kiln <i>hot</i>');
      await shot('new-email');
      await save('New action');
      const [email] = await storedActions();
      assert.equal(email?.type, 'EmailNotificationAction');
      assert.equal(email?.to, 'ops@example.com, night@example.com');
      assert.equal(email?.subject, 'Kiln <i>hot</i>');
      await page.getByRole('cell').getByText('Kiln <i>hot</i>', { exact: true }).waitFor();
    });

    it("when an HTTP call's URL is refused then the API's message is said under it and the form keeps what was typed", async () => {
      await page.getByRole('button', { name: 'New action', exact: true }).click();
      await field('Type').selectOption({ label: 'HTTP call' });
      await field('URL').fill('ftp://example.com/hook');
      await field('Method').selectOption('PUT');
      await field('Headers').fill('{"X-Kiln": "1"}');
      await field('Body').fill('{"alert": "$THING$"}');
      // An HTTP body takes $THING$ only, unlike an SMS body or an alert message: the hint says so.
      assert.match(await descriptionOf(field('Body')), /\$THING\$ replaced by the thing key \(no other placeholders\)/);
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      const refusal = await api.request('POST', '/api/v3/notification_actions', {
        token,
        body: {
          notification_action: {
            type: 'CallHttpUrlAction',
            rule_key: ruleKey,
            method: 'PUT',
            url: 'ftp://example.com/hook',
          },
        },
      });
      assert.equal(refusal.status, 400);
      assert.equal(refusal.body.errors[0].param, 'notification_action.url');
      const form = page.getByRole('form', { name: 'New action', exact: true });
      await form.getByRole('alert').filter({ hasText: 'Must be an http or https URL.' }).waitFor();
      assert.equal(await descriptionOf(field('URL')), 'Must be an http or https URL.');
      assert.equal(await field('Headers').inputValue(), '{"X-Kiln": "1"}');
      await shot('refused');
      await field('URL').fill('http://127.0.0.1:9/hook');
      await save('New action');
      const http = (await storedActions()).find((a) => a.type === 'CallHttpUrlAction');
      assert.deepEqual(
        { url: http?.url, method: http?.method, headers: http?.headers, body: http?.body },
        { url: 'http://127.0.0.1:9/hook', method: 'PUT', headers: { 'X-Kiln': '1' }, body: '{"alert": "$THING$"}' },
      );
    });

    it("when a property-setting action and an SMS action are made then each is stored with its kind's fields", async () => {
      await page.getByRole('button', { name: 'New action', exact: true }).click();
      await field('Type').selectOption({ label: "Set the thing's properties" });
      await field('Body').fill('{"user_defined_properties": {"mode": "cooling"}}');
      await save('New action');
      await page.getByRole('button', { name: 'New action', exact: true }).click();
      await field('Type').selectOption({ label: 'SMS' });
      await field('Name').fill('Night shift');
      await field('Phone number').fill('+15550100');
      await field('Body').fill('Kiln too hot');
      assert.match(await descriptionOf(field('Body')), /placeholders as in an alert message/);
      await save('New action');
      const stored = await storedActions();
      const properties = stored.find((a) => a.type === 'ThingUserDefinedPropertiesAction');
      assert.deepEqual(JSON.parse(String(properties?.body)), { user_defined_properties: { mode: 'cooling' } });
      const sms = stored.find((a) => a.type === 'SMSNotificationAction');
      assert.deepEqual([sms?.name, sms?.phone_number, sms?.body], ['Night shift', '+15550100', 'Kiln too hot']);
      await shot('list');
    });

    it('when Edit changes an e-mail action then Save writes the change and keeps its type', async () => {
      await page
        .getByRole('button', { name: 'Edit', exact: true, description: 'E-mail ops@example.com, night@example.com' })
        .click();
      assert.equal(await field('Subject').inputValue(), 'Kiln <i>hot</i>');
      await field('Subject').fill('Kiln too hot');
      await save('Edit E-mail action');
      const email = (await storedActions()).find((a) => a.type === 'EmailNotificationAction');
      assert.equal(email?.subject, 'Kiln too hot');
    });

    it('when the rule fires then the HTTP action lists its failed delivery attempt', async () => {
      const device = new Device(api.url, await createKeyPair(api, token));
      const thingKey = unique('kiln');
      await device.register({ thing_key: thingKey, name: 'Kiln' });
      assert.equal((await device.event({ thing_key: thingKey, data: { temperature: 120.5 } })).status, 200);
      const http = (await storedActions()).find((a) => a.type === 'CallHttpUrlAction');
      for (let tries = 0; tries < 150; tries++) {
        const attempts = await api.request(
          'GET',
          `/api/v3/notification_actions/${http?.notification_action_key}/deliveries`,
          { token },
        );
        if (attempts.body.total_count > 0) break;
        await new Promise((done) => setTimeout(done, 100));
      }
      await page.getByRole('button', { name: 'Deliveries of HTTP call http://127.0.0.1:9/hook', exact: true }).click();
      const deliveries = page.getByRole('region', { name: /^Deliveries of HTTP call/ });
      const failed = deliveries.getByRole('row').filter({ hasText: 'failed' }).first();
      await failed.waitFor();
      // The attempt says what it was for: the thing whose event fired the rule, and the message.
      await failed.getByRole('link', { name: 'Kiln', exact: true }).waitFor();
      assert.equal(
        await failed.getByRole('link', { name: 'Kiln', exact: true }).getAttribute('href'),
        `/console/things/${thingKey}`,
      );
      await failed.getByRole('cell', { name: 'hot', exact: true }).waitFor();
      await shot('deliveries');
    });

    it('when Delete is confirmed then the dialog named the action and it is gone', async () => {
      await page.getByRole('button', { name: 'Delete', exact: true, description: 'SMS +15550100' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete SMS +15550100?', exact: true });
      await dialog.locator('strong').getByText('SMS +15550100', { exact: true }).waitFor();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page
        .getByRole('button', { name: 'Delete', exact: true, description: 'SMS +15550100' })
        .waitFor({ state: 'detached' });
      assert.equal((await storedActions()).filter((a) => a.type === 'SMSNotificationAction').length, 0);
    });

    it('when a role may only read actions then they are listed without New action, Edit or Delete', async () => {
      const reader = await userWithAbilities(api, token, [31, 111]);
      await expectReadOnly(
        browser,
        api.url,
        {
          path: `notification-actions?rule=${ruleKey}`,
          heading: 'Notification actions',
          screenshot: `${store.name}-actions-read-only`,
        },
        reader,
        (on) => on.getByRole('button', { name: /^Deliveries of E-mail/ }).waitFor(),
        /New action|Edit|Delete/,
      );
    });

    it("when a role that may not read actions opens the page by URL then it shows the API's 403 message", async () => {
      const outsider = await userWithAbilities(api, token, [31]);
      await expectRefusedByUrl(
        api,
        browser,
        {
          path: 'notification-actions',
          heading: 'Notification actions',
          listPath: `/api/v3/notification_actions?rule_key=${ruleKey}`,
        },
        outsider,
      );
    });

    it('when the journeys are done then the page broke no Content-Security-Policy and threw nothing', () => {
      assert.deepEqual(admin.problems, []);
    });
  });
}
