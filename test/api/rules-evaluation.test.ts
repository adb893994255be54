/**
 * How rules see events: several events of one thing in one request, alert messages naming what the
 * event holds, and rules switched on and off or pointed at other things.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createThing, unique } from '../support/fixtures.ts';
import type { TestServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

async function createRule(api: TestServer, token: string, rule: Record<string, unknown>) {
  const created = await api.request('POST', '/api/v3/rules', {
    token,
    body: { rule: { name: unique('rule'), ...rule } },
  });
  assert.equal(created.status, 200, created.text);
  return created.body.rule;
}

async function updateRule(api: TestServer, token: string, ruleKey: string, rule: Record<string, unknown>) {
  const updated = await api.request('PUT', `/api/v3/rules/${ruleKey}`, { token, body: { rule } });
  assert.equal(updated.status, 200, updated.text);
  return updated.body.rule;
}

/** Sends the values as one request's events, one millisecond apart, in this order. */
async function sendValues(api: TestServer, token: string, thingKey: string, values: number[]) {
  const start = Date.now() - 60_000;
  const events = values.map((v, i) => ({ timestamp: start + i, data: { v } }));
  const sent = await api.request('POST', `/api/v3/things/${thingKey}/events`, { token, body: { events } });
  assert.equal(sent.status, 200, sent.text);
}

async function alertMessages(api: TestServer, token: string, thingKey: string): Promise<string[]> {
  const list = await api.request('GET', '/api/v3/alerts', { token, query: { thing_key: thingKey, per: 100 } });
  assert.equal(list.status, 200, list.text);
  return (list.body.alerts as { message: string }[]).map((a) => a.message).sort();
}

async function ruleKeysListed(api: TestServer, token: string, query: Record<string, string>) {
  const list = await api.request('GET', '/api/v3/rules', { token, query: { per: 1000, ...query } });
  assert.equal(list.status, 200, list.text);
  return (list.body.rules as { rule_key: string }[]).map((r) => r.rule_key);
}

describeOnStores('rules evaluating events', (ctx) => {
  it('when one request carries several events of a thing then an on_enter rule fires at each rise among them, going on from the state the last request left', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    await createRule(ctx.api, token, {
      condition: 'v > 5',
      thing_keys: [thing.thing_key],
      alert_type: 1,
      alert_message: 'v={{v}}',
    });
    await sendValues(ctx.api, token, thing.thing_key, [1, 10, 2, 12, 15]);
    assert.deepEqual(await alertMessages(ctx.api, token, thing.thing_key), ['v=10', 'v=12']);
    await sendValues(ctx.api, token, thing.thing_key, [20]);
    assert.deepEqual(await alertMessages(ctx.api, token, thing.thing_key), ['v=10', 'v=12'], 'still over: no rise');
    await sendValues(ctx.api, token, thing.thing_key, [1, 30, 31]);
    assert.deepEqual(await alertMessages(ctx.api, token, thing.thing_key), ['v=10', 'v=12', 'v=30']);
  });

  it('when an alert message names an object, a missing metric and thing fields then they are written as JSON, as nothing and as the fields', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, { user_defined_properties: { site: 'Pune' } });
    await createRule(ctx.api, token, {
      condition: 'machine.speed > 0',
      trigger: 'every_event',
      thing_keys: [thing.thing_key],
      alert_message: '{{machine}}|{{missing}}|{{ machine.status }}|{{thing.name}}|{{thing.user_defined_properties}}',
    });
    const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { machine: { status: 'ok', speed: 3 } } }] },
    });
    assert.equal(sent.status, 200, sent.text);
    assert.deepEqual(await alertMessages(ctx.api, token, thing.thing_key), [
      `{"status":"ok","speed":3}||ok|${thing.name}|{"site":"Pune"}`,
    ]);
  });

  it('when a rule is made disabled, then enabled and pointed at other things, a template or a group then each next event follows, and rules are listed by template and by enabled', async () => {
    const token = await ctx.api.adminToken();
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('Pumps') } },
    });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key as string;
    const pump = await createThing(ctx.api, token, { thing_template_key: templateKey });
    const other = await createThing(ctx.api, token, {});
    const rule = await createRule(ctx.api, token, {
      condition: 'v > 1',
      trigger: 'every_event',
      thing_template_key: templateKey,
      alert_message: 'first {{v}}',
      enabled: false,
    });
    assert.equal(rule.enabled, false);
    await sendValues(ctx.api, token, pump.thing_key, [2]);
    assert.deepEqual(await alertMessages(ctx.api, token, pump.thing_key), [], 'a disabled rule does not fire');
    assert.ok(!(await ruleKeysListed(ctx.api, token, { enabled: 'true' })).includes(rule.rule_key));
    assert.ok((await ruleKeysListed(ctx.api, token, { enabled: 'false' })).includes(rule.rule_key));
    assert.deepEqual(await ruleKeysListed(ctx.api, token, { thing_template_key: templateKey }), [rule.rule_key]);

    await updateRule(ctx.api, token, rule.rule_key, { enabled: true });
    assert.ok((await ruleKeysListed(ctx.api, token, { enabled: 'true' })).includes(rule.rule_key));
    await sendValues(ctx.api, token, pump.thing_key, [3]);
    assert.deepEqual(await alertMessages(ctx.api, token, pump.thing_key), ['first 3']);

    const moved = await updateRule(ctx.api, token, rule.rule_key, {
      thing_template_key: null,
      thing_keys: [other.thing_key, other.thing_key],
      alert_message: 'second {{v}}',
      description: 'now the other thing',
    });
    assert.equal(moved.thing_template_key, null);
    assert.deepEqual(moved.thing_keys, [other.thing_key]);
    assert.equal(moved.description, 'now the other thing');
    assert.deepEqual(await ruleKeysListed(ctx.api, token, { thing_template_key: templateKey }), []);
    await sendValues(ctx.api, token, pump.thing_key, [4]);
    await sendValues(ctx.api, token, other.thing_key, [5]);
    assert.deepEqual(await alertMessages(ctx.api, token, pump.thing_key), ['first 3']);
    assert.deepEqual(await alertMessages(ctx.api, token, other.thing_key), ['second 5']);

    const group = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('g'), group_type: 1, thing_keys: [pump.thing_key] } },
    });
    assert.equal(group.status, 200, group.text);
    const grouped = await updateRule(ctx.api, token, rule.rule_key, {
      thing_keys: [],
      group_key: group.body.group.group_key,
    });
    assert.equal(grouped.group_key, group.body.group.group_key);
    await sendValues(ctx.api, token, pump.thing_key, [6]);
    await sendValues(ctx.api, token, other.thing_key, [7]);
    assert.deepEqual(await alertMessages(ctx.api, token, pump.thing_key), ['first 3', 'second 6']);
    assert.deepEqual(await alertMessages(ctx.api, token, other.thing_key), ['second 5']);
  });

  it('when a rule raises an alert then data.event.timestamp follows timestamp_format like the alert timestamp', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const rule = await createRule(ctx.api, token, {
      condition: 'temp > 80',
      thing_keys: [thing.thing_key],
      alert_type: 2,
    });
    const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ timestamp: 1_700_000_000_000, data: { temp: 90 } }] },
    });
    assert.equal(sent.status, 200, sent.text);
    const listed = async (query: Record<string, string>) => {
      const list = await ctx.api.request('GET', '/api/v3/alerts', {
        token,
        query: { rule_key: rule.rule_key, ...query },
      });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.alerts.length, 1);
      return list.body.alerts[0];
    };
    const asInt = await listed({});
    assert.equal(asInt.timestamp, 1_700_000_000);
    assert.equal(asInt.data.thing.last_event.timestamp, 1_700_000_000);
    assert.deepEqual(asInt.data.event, { timestamp: 1_700_000_000, data: { temp: 90 } });
    const asText = await listed({ timestamp_format: 'str', time_zone: 'UTC' });
    assert.equal(asText.timestamp, '2023/11/14 22:13:20');
    assert.equal(asText.data.thing.last_event.timestamp, '2023/11/14 22:13:20');
    assert.deepEqual(asText.data.event, { timestamp: '2023/11/14 22:13:20', data: { temp: 90 } });
    const one = await ctx.api.request('GET', `/api/v3/alerts/${asInt.alert_key}`, {
      token,
      query: { timestamp_format: 'str', time_zone: 'UTC' },
    });
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.alert.data.event.timestamp, '2023/11/14 22:13:20');
  });
});
