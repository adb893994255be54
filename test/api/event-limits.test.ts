import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createThing } from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

const KEY_PAIR_LIMIT = 30;

const bulk = (thingKey: string, count: number) => ({
  events: Array.from({ length: count }, (_, i) => ({ thing_key: thingKey, data: { seq: i } })),
});

/** A counter's value in the /metrics text, 0 when absent. */
function counter(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

describeOnStores(
  'limits of events a second',
  (ctx) => {
    it('when a parent sets a child organisation’s events_per_second then events past it are refused with 429 and Retry-After over HTTP and MQTT, counted in usage and /metrics', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const byItself = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
        token: child.token,
        body: { organisation: { events_per_second: 0 } },
      });
      assert.equal(byItself.status, 403, 'a child does not lift its own limit');
      const set = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
        token: admin,
        body: { organisation: { events_per_second: 10 } },
      });
      assert.equal(set.status, 200, set.text);
      assert.equal(set.body.organisation.events_per_second, 10);
      const before = (await ctx.api.request('GET', '/metrics')).text;
      const pair = await createKeyPair(ctx.api, child.token);
      const thing = await createThing(ctx.api, child.token, {});
      const device = new Device(ctx.api.url, pair);
      assert.equal((await device.event(bulk(thing.thing_key, 10))).status, 200);
      const refused = await device.event(bulk(thing.thing_key, 10));
      assert.equal(refused.status, 429, refused.text);
      assert.ok(Number(refused.headers['retry-after']) >= 1, JSON.stringify(refused.headers));
      assert.equal(refused.body.errors[0].code, 'rate_limited');
      assert.match(refused.body.message, /organisation's limit of 10 events a second/);
      const mqttDevice = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, pair);
      try {
        const overMqtt = await mqttDevice.send('event', bulk(thing.thing_key, 10));
        assert.equal(overMqtt.http_code, 429, JSON.stringify(overMqtt));
        assert.equal(overMqtt.http_msg.errors?.[0]?.code, 'rate_limited');
        assert.ok(((overMqtt.http_msg as { retry_after?: number }).retry_after ?? 0) >= 1, JSON.stringify(overMqtt));
      } finally {
        await mqttDevice.close();
      }
      const usage = await ctx.api.request('GET', '/api/v3/usage', { token: child.token });
      assert.equal(usage.body.usage.events_limited_today, 20, usage.text);
      assert.equal(usage.body.usage.events_stored_today, 10);
      const after = (await ctx.api.request('GET', '/metrics')).text;
      const line = 'thingbase_events_limited_total{reason="organisation_limit"}';
      assert.equal(counter(after, line) - counter(before, line), 20);
      const other = await childOrganisation(ctx.api, admin);
      const otherThing = await createThing(ctx.api, other.token, {});
      const otherDevice = new Device(ctx.api.url, await createKeyPair(ctx.api, other.token));
      assert.equal(
        (await otherDevice.event(bulk(otherThing.thing_key, 20))).status,
        200,
        'another organisation is not held',
      );
    });

    it('when a key pair sends past EVENTS_PER_SECOND_PER_KEY_PAIR then its events are refused with 429 naming that limit, while another key pair of the organisation is taken', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const thing = await createThing(ctx.api, child.token, {});
      const device = new Device(ctx.api.url, await createKeyPair(ctx.api, child.token));
      assert.equal((await device.event(bulk(thing.thing_key, KEY_PAIR_LIMIT))).status, 200);
      const refused = await device.event(bulk(thing.thing_key, 10));
      assert.equal(refused.status, 429, refused.text);
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.equal(refused.body.errors[0].code, 'rate_limited');
      assert.match(refused.body.message, /key pair's limit of 30 events a second/);
      const another = new Device(ctx.api.url, await createKeyPair(ctx.api, child.token));
      assert.equal((await another.event(bulk(thing.thing_key, 10))).status, 200);
      const usage = await ctx.api.request('GET', '/api/v3/usage', { token: child.token });
      assert.equal(usage.body.usage.events_limited_today, 10, usage.text);
      const metrics = (await ctx.api.request('GET', '/metrics')).text;
      assert.ok(counter(metrics, 'thingbase_events_limited_total{reason="key_pair_limit"}') >= 10);
    });
  },
  {
    env: async () => ({
      EVENTS_PER_SECOND_PER_KEY_PAIR: String(KEY_PAIR_LIMIT),
      MQTT_PORT: String(await freePort()),
    }),
  },
);
