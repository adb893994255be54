import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createKeyPair, Device, type KeyPair } from '../support/device.ts';
import { unique } from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { eventually, startHttpPeer, startSmtpPeer } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

// Peers on loopback, shared by both stores' suites; each test looks only at what its own thing caused.
let smtp: Awaited<ReturnType<typeof startSmtpPeer>>;
let webhook: Awaited<ReturnType<typeof startHttpPeer>>;
let sms: Awaited<ReturnType<typeof startHttpPeer>>;
before(async () => {
  smtp = await startSmtpPeer();
  webhook = await startHttpPeer();
  sms = await startHttpPeer();
});
after(async () => {
  await smtp.close();
  await webhook.close();
  await sms.close();
});

describeOnStores(
  'rules firing notification actions, end to end',
  (ctx) => {
    let keyPair: KeyPair;
    let device: MqttDevice;

    before(async () => {
      keyPair = await createKeyPair(ctx.api, await ctx.api.adminToken());
      device = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, keyPair);
    });
    after(async () => {
      await device.close();
    });

    async function thingWithRule(rule: Record<string, unknown>, action: Record<string, unknown>) {
      const thingKey = unique('hot');
      const registered = await device.send('register', { thing_key: thingKey, name: `Furnace ${thingKey}` });
      assert.equal(registered.http_code, 200, JSON.stringify(registered));
      const token = await ctx.api.adminToken();
      const created = await ctx.api.request('POST', '/api/v3/rules', {
        token,
        body: {
          rule: {
            name: `Too hot ${thingKey}`,
            condition: 'temperature > 80',
            alert_type: 2,
            alert_message: '{{thing.name}} is at {{temperature}} degrees',
            thing_keys: [thingKey],
            ...rule,
          },
        },
      });
      assert.equal(created.status, 200, created.text);
      const ruleKey = created.body.rule.rule_key as string;
      const made = await ctx.api.request('POST', '/api/v3/notification_actions', {
        token,
        body: { notification_action: { rule_key: ruleKey, ...action } },
      });
      assert.equal(made.status, 200, made.text);
      return { thingKey, ruleKey, actionKey: made.body.notification_action.notification_action_key as string };
    }

    async function publish(thingKey: string, data: Record<string, unknown>) {
      const ack = await device.send('event', { thing_key: thingKey, data });
      assert.equal(ack.http_code, 200, JSON.stringify(ack));
    }

    async function alertsOf(thingKey: string) {
      const token = await ctx.api.adminToken();
      const list = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: thingKey } });
      assert.equal(list.status, 200, list.text);
      return list.body.alerts as { alert_key: string; message: string; alert_type: number; data: any }[];
    }

    it('when a device reports a temperature over the limit then one e-mail with the alert goes out', async () => {
      const { thingKey } = await thingWithRule(
        {},
        { type: 'EmailNotificationAction', to: 'ops@example.com', cc: 'shift@example.com', subject: 'Furnace alarm' },
      );
      await publish(thingKey, { temperature: 70 });
      await publish(thingKey, { temperature: 85 });
      await publish(thingKey, { temperature: 90 }); // still over: on_enter does not fire again
      const mine = () => smtp.received.filter((m) => m.raw.includes(thingKey));
      await eventually(() => mine().length >= 1, 'the e-mail');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mine().length, 1);
      const mail = mine()[0];
      assert.ok(mail);
      assert.deepEqual(mail.to.sort(), ['ops@example.com', 'shift@example.com']);
      assert.match(mail.raw, /Subject: Furnace alarm/);
      assert.match(mail.raw, new RegExp(`Furnace ${thingKey} is at 85 degrees`));
      const alerts = await alertsOf(thingKey);
      assert.equal(alerts.length, 1);
      assert.equal(alerts[0]?.message, `Furnace ${thingKey} is at 85 degrees`);
      assert.equal(alerts[0]?.alert_type, 2);
      assert.equal(alerts[0]?.data.thing.thing_key, thingKey);
    });

    it('when the condition clears and holds again then an on_enter rule fires again', async () => {
      const { thingKey } = await thingWithRule(
        { alert_type: 1 },
        {
          type: 'SMSNotificationAction',
          name: 'Night shift',
          phone_number: '+15550100',
          body: 'Hot: {{temperature}} at {{thing.thing_key}}',
        },
      );
      for (const temperature of [85, 60, 95]) await publish(thingKey, { temperature });
      const mine = () => sms.received.filter((r) => r.body.includes(thingKey));
      await eventually(() => mine().length >= 2, 'two SMS');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mine().length, 2);
      const messages = mine().map((r) => JSON.parse(r.body));
      assert.deepEqual(
        messages.map((m) => m.message).sort(),
        [`Hot: 85 at ${thingKey}`, `Hot: 95 at ${thingKey}`].sort(),
      );
      assert.equal(messages[0].to, '+15550100');
      assert.equal(messages[0].name, 'Night shift');
      assert.equal((await alertsOf(thingKey)).length, 2);
    });

    it('when an HTTP action fires then the peer gets one call with $THING$ replaced, headers, query and an idempotency key', async () => {
      const { thingKey, actionKey } = await thingWithRule(
        { trigger: 'every_event', alert_type: null, condition: 'machine.status == "fault"' },
        {
          type: 'CallHttpUrlAction',
          method: 'PUT',
          url: `${webhook.url}/hooks/$THING$`,
          headers: { 'X-Team': 'maintenance', Authorization: 'Bearer hook-credential' },
          query: { source: 'thingbase', api_key: 'query-credential' },
          body: '{"thing":"$THING$"}',
        },
      );
      await publish(thingKey, { machine: { status: 'fault' } });
      await publish(thingKey, { machine: { status: 'ok' } });
      await publish(thingKey, { machine: { status: 'fault' } });
      const mine = () => webhook.received.filter((r) => r.url.includes(thingKey));
      await eventually(() => mine().length >= 2, 'two calls');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mine().length, 2, 'every_event fires on each matching event');
      const call = mine()[0];
      assert.ok(call);
      assert.equal(call.method, 'PUT');
      assert.equal(call.url, `/hooks/${thingKey}?source=thingbase&api_key=query-credential`);
      assert.equal(call.headers['x-team'], 'maintenance');
      // Sealed at rest, opened for the delivery.
      assert.equal(call.headers.authorization, 'Bearer hook-credential');
      assert.deepEqual(JSON.parse(call.body), { thing: thingKey });
      assert.match(String(call.headers['idempotency-key']), /^[0-9a-z]{10}$/);
      assert.notEqual(mine()[1]?.headers['idempotency-key'], call.headers['idempotency-key']);
      assert.equal((await alertsOf(thingKey)).length, 0, 'alert_type null raises no alert');
      const token = await ctx.api.adminToken();
      await eventually(async () => {
        const attempts = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, {
          token,
        });
        return attempts.status === 200 && attempts.body.total_count === 2;
      }, 'two recorded attempts');
      // Each attempt says what it was for: the rule and thing, and no alert where the rule raises none.
      const attempts = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
      for (const attempt of attempts.body.deliveries) {
        assert.equal(attempt.thing_key, thingKey);
        assert.equal(attempt.thing_name, `Furnace ${thingKey}`);
        assert.equal(attempt.rule_name, `Too hot ${thingKey}`);
        assert.equal(attempt.alert_key, null);
      }
    });

    it('when a peer fails then the delivery is retried with backoff and every attempt is recorded', async () => {
      let failures = 0;
      const { thingKey, ruleKey, actionKey } = await thingWithRule(
        {},
        { type: 'CallHttpUrlAction', method: 'POST', url: `${webhook.url}/flaky/$THING$` },
      );
      const previous = webhook.peer.answer;
      webhook.peer.answer = (request) => {
        if (request.url.includes(thingKey) && failures < 2) {
          failures += 1;
          return 503;
        }
        return previous(request);
      };
      try {
        await publish(thingKey, { temperature: 99 });
        const mine = () => webhook.received.filter((r) => r.url.includes(thingKey));
        await eventually(() => mine().some((r) => r.status === 200), 'a successful call', 15_000);
        assert.equal(mine().length, 3);
        assert.equal(new Set(mine().map((r) => r.headers['idempotency-key'])).size, 1, 'one delivery, three attempts');
        const payload = JSON.parse(mine()[2]?.body ?? '{}');
        assert.equal(payload.thing.thing_key, thingKey);
        assert.equal(payload.event.data.temperature, 99);
        assert.equal(payload.alert.alert_type, 2);
        const token = await ctx.api.adminToken();
        await eventually(async () => {
          const list = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
          return list.body.total_count === 3;
        }, 'three attempts listed');
        const list = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
        const statuses = list.body.deliveries.map((d: { status: string }) => d.status);
        assert.deepEqual(statuses, ['delivered', 'failed', 'failed']);
        assert.match(list.body.deliveries[2].error, /503/);
        // Every attempt names the firing's rule, thing, alert and message.
        const [alert] = await alertsOf(thingKey);
        assert.ok(alert);
        for (const attempt of list.body.deliveries)
          assert.deepEqual(
            {
              rule_key: attempt.rule_key,
              thing_key: attempt.thing_key,
              alert_key: attempt.alert_key,
              message: attempt.message,
            },
            { rule_key: ruleKey, thing_key: thingKey, alert_key: alert.alert_key, message: alert.message },
          );
      } finally {
        webhook.peer.answer = previous;
      }
    });

    it('when a property-setting action fires then the thing gets the properties, with an audit trail', async () => {
      const { thingKey } = await thingWithRule(
        { condition: 'vibration >= 7', alert_type: 3 },
        { type: 'ThingUserDefinedPropertiesAction', body: { user_defined_properties: { state: 'needs service' } } },
      );
      await publish(thingKey, { vibration: 8 });
      const token = await ctx.api.adminToken();
      await eventually(async () => {
        const thing = await ctx.api.request('GET', `/api/v3/things/${thingKey}`, { token });
        return thing.body.thing.user_defined_properties.state === 'needs service';
      }, 'the property');
      const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
        token,
        query: { entity_key: thingKey, entity_type: 'Thing' },
      });
      const update = audit.body.audit_trails.find((a: { action_taken: string }) => a.action_taken === 'update');
      assert.ok(update, audit.text);
      assert.equal(update.new_entity_contents.user_defined_properties.state, 'needs service');
      const alerts = await alertsOf(thingKey);
      assert.equal(alerts[0]?.alert_type, 3);
      assert.equal(alerts[0]?.data.alert_type_string, 'Critical');
    });

    it('when a rule watches a template or a thing.<field> condition then only matching things fire', async () => {
      const http = new Device(ctx.api.url, keyPair);
      const watched = unique('site');
      const other = unique('site');
      for (const [key, site] of [
        [watched, 'Pune'],
        [other, 'Oslo'],
      ] as const) {
        assert.equal((await http.register({ thing_key: key })).status, 200);
        const token = await ctx.api.adminToken();
        await ctx.api.request('PUT', `/api/v3/things/${key}/set_user_defined_properties`, {
          token,
          body: { user_defined_properties: { site } },
        });
      }
      const token = await ctx.api.adminToken();
      const created = await ctx.api.request('POST', '/api/v3/rules', {
        token,
        body: {
          rule: {
            name: unique('pune'),
            condition: "pressure > 5 and thing.user_defined_properties.site == 'Pune'",
            alert_type: 0,
            alert_message: 'pressure {{pressure}}',
          },
        },
      });
      assert.equal(created.status, 200, created.text);
      for (const key of [watched, other])
        assert.equal((await http.event({ thing_key: key, data: { pressure: 6 } })).status, 200);
      assert.equal((await alertsOf(watched)).length, 1);
      assert.equal((await alertsOf(other)).length, 0);
      await ctx.api.request('DELETE', `/api/v3/rules/${created.body.rule.rule_key}`, { token });
    });
  },
  {
    env: async () => ({
      MQTT_PORT: String(await freePort()),
      SMTP_URL: smtp.url,
      SMS_URL: `${sms.url}/sms`,
      ALLOW_PRIVATE_WEBHOOKS: 'true',
      DELIVERY_RETRY_BASE_MS: '100',
    }),
  },
);

describeOnStores(
  'outbound calls to private addresses',
  (ctx) => {
    it('when an HTTP action made where private hosts were allowed targets one then its delivery is refused and recorded, and the peer gets nothing', async (t) => {
      // Made by a server that allowed private hosts (ALLOW_PRIVATE_WEBHOOKS), whose store this one,
      // which does not, takes over: a URL naming such a host outright is refused when made here
      // (notification-actions.test.ts), so its deliveries are what keeps it from being called.
      const allowing = await startServer(ctx.store, {
        storeSettings: ctx.api.storeSettings,
        env: async () => ({ MQTT_PORT: String(await freePort()), ALLOW_PRIVATE_WEBHOOKS: 'true' }),
      });
      const thingKey = unique('guard');
      const actionKeys: string[] = [];
      try {
        const token = await allowing.adminToken();
        const http = new Device(allowing.url, await createKeyPair(allowing, token));
        assert.equal((await http.register({ thing_key: thingKey })).status, 200);
        const rule = await allowing.request('POST', '/api/v3/rules', {
          token,
          body: { rule: { name: unique('guard'), condition: 'level > 1', thing_keys: [thingKey], alert_type: 0 } },
        });
        assert.equal(rule.status, 200, rule.text);
        const port = new URL(webhook.url).port;
        for (const url of [
          `${webhook.url}/direct`,
          `http://localhost:${port}/named`,
          `http://[::1]:${port}/v6`,
          // 127.0.0.1 written as an IPv4-mapped IPv6 address reaches the same socket.
          `http://[::ffff:127.0.0.1]:${port}/mapped`,
        ]) {
          const made = await allowing.request('POST', '/api/v3/notification_actions', {
            token,
            body: {
              notification_action: {
                type: 'CallHttpUrlAction',
                rule_key: rule.body.rule.rule_key,
                method: 'POST',
                url,
              },
            },
          });
          assert.equal(made.status, 200, made.text);
          actionKeys.push(made.body.notification_action.notification_action_key);
        }
      } finally {
        await allowing.close();
      }
      // The server that takes over, started after the actions were made, so that it reads them.
      const taking = await startServer(ctx.store, {
        storeSettings: ctx.api.storeSettings,
        env: async () => ({ MQTT_PORT: String(await freePort()), DELIVERY_RETRY_BASE_MS: '100' }),
      });
      t.after(() => taking.close());
      const token = await taking.adminToken();
      const device = new Device(taking.url, await createKeyPair(taking, token));
      const before = webhook.received.length;
      assert.equal((await device.event({ thing_key: thingKey, data: { level: 2 } })).status, 200);
      for (const actionKey of actionKeys) {
        await eventually(async () => {
          const list = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
          return list.body.total_count >= 1;
        }, 'a recorded attempt');
        const list = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
        assert.equal(list.body.deliveries[0].status, 'failed');
        assert.match(list.body.deliveries[0].error, /private or loopback/);
        // A name's error does not tell what it resolves to (an address given as such is the action's own).
        if (actionKey === actionKeys[1]) assert.doesNotMatch(list.body.deliveries[0].error, /127\.0\.0\.1|::1/);
      }
      // No later attempt can do better: the refusal is final, not retried (retries start after 100 ms here).
      await new Promise((resolve) => setTimeout(resolve, 1500));
      for (const actionKey of actionKeys) {
        const list = await ctx.api.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
        assert.equal(list.body.total_count, 1, 'one attempt, not retried');
      }
      assert.equal(webhook.received.length, before);
    });
  },
  {
    env: async () => ({ MQTT_PORT: String(await freePort()), DELIVERY_RETRY_BASE_MS: '100' }),
  },
);
