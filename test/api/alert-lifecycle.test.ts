/**
 * The alert lifecycle (docs/rules.md, "Alert lifecycle"): open, acknowledged, cleared; who did it, when
 * and with what comment; the 409s of steps a status does not allow; the status and rule_key filters;
 * audit trails; realtime subscribers told of each step; the device's instruction acknowledgement
 * untouched.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { SocketClient } from '../support/realtime.ts';
import { ADMIN_EMAIL } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('alert lifecycle', (ctx) => {
  /** A rule's alert on a fresh thing: the rule fires on the first event over 5. */
  async function ruleAlert(token: string) {
    const thing = await createThing(ctx.api, token, {});
    const rule = await ctx.api.request('POST', '/api/v3/rules', {
      token,
      body: { rule: { name: unique('rule'), condition: 'v > 5', thing_keys: [thing.thing_key], alert_type: 2 } },
    });
    assert.equal(rule.status, 200, rule.text);
    const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { v: 9 } }] },
    });
    assert.equal(sent.status, 200, sent.text);
    const list = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { thing_key: thing.thing_key } });
    assert.equal(list.body.total_count, 1, list.text);
    return { thingKey: thing.thing_key, ruleKey: rule.body.rule.rule_key as string, alert: list.body.alerts[0] };
  }

  const step = (token: string, alertKey: string, name: string, body?: object) =>
    ctx.api.request('POST', `/api/v3/alerts/${alertKey}/${name}`, { token, ...(body ? { body } : {}) });

  it('when a rule raises an alert then it is open, names its rule and has nothing acknowledged or cleared', async () => {
    const token = await ctx.api.adminToken();
    const { alert, ruleKey } = await ruleAlert(token);
    assert.equal(alert.status, 'open');
    assert.equal(alert.rule_key, ruleKey);
    for (const field of ['acknowledged_at', 'acknowledged_by', 'cleared_at', 'cleared_by', 'comment']) {
      assert.equal(alert[field], null, field);
    }
  });

  it("when a device answers a rule's alert by its key then the rule's details in its data are kept", async () => {
    const token = await ctx.api.adminToken();
    const { alert, ruleKey } = await ruleAlert(token);
    const device = new Device(ctx.api.url, await createKeyPair(ctx.api, token));
    const answered = await device.post('/api/v3/alerts.json', {
      alert: { alert_key: alert.alert_key, message: 'seen', alert_type: 0, data: { note: 'on it', rule_key: 'x' } },
    });
    assert.equal(answered.status, 200, answered.text);
    const read = await ctx.api.request('GET', `/api/v3/alerts/${alert.alert_key}`, { token });
    assert.equal(read.status, 200, read.text);
    const { data } = read.body.alert;
    assert.equal(data.note, 'on it', 'what the device sent');
    assert.equal(data.rule_key, ruleKey, 'the rule, not what the device said it was');
    assert.deepEqual(
      [data.rule_name, data.event, data.thing],
      [alert.data.rule_name, alert.data.event, alert.data.thing],
    );
  });

  it('when an alert is acknowledged then cleared then each step records who, when and the comment, and repeats are 409s', async () => {
    const token = await ctx.api.adminToken();
    const { alert } = await ruleAlert(token);
    const before = Math.floor(Date.now() / 1000);
    const acknowledged = await step(token, alert.alert_key, 'acknowledge', { comment: 'looking at it' });
    assert.equal(acknowledged.status, 200, acknowledged.text);
    assert.equal(acknowledged.body.alert.status, 'acknowledged');
    assert.equal(acknowledged.body.alert.acknowledged_by, ADMIN_EMAIL);
    assert.ok(acknowledged.body.alert.acknowledged_at >= before);
    assert.equal(acknowledged.body.alert.comment, 'looking at it');
    assert.equal(acknowledged.body.alert.cleared_at, null);
    const again = await step(token, alert.alert_key, 'acknowledge');
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.success, false);
    assert.equal(again.body.errors[0].code, 'conflict');
    const cleared = await step(token, alert.alert_key, 'clear', {});
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.alert.status, 'cleared');
    assert.equal(cleared.body.alert.cleared_by, ADMIN_EMAIL);
    assert.equal(cleared.body.alert.comment, 'looking at it', 'no comment keeps the last one');
    assert.equal(cleared.body.alert.acknowledged_by, ADMIN_EMAIL);
    assert.equal((await step(token, alert.alert_key, 'clear')).status, 409);
    assert.equal((await step(token, alert.alert_key, 'acknowledge')).status, 409, 'a cleared alert');
    const read = await ctx.api.request('GET', `/api/v3/alerts/${alert.alert_key}`, {
      token,
      query: { timestamp_format: 'str' },
    });
    assert.equal(read.body.alert.status, 'cleared');
    assert.match(read.body.alert.cleared_at, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
    const trails = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Alert', entity_key: alert.alert_key },
    });
    assert.equal(trails.status, 200, trails.text);
    assert.equal(trails.body.total_count, 2, trails.text);
    const kinds = trails.body.audit_trails.map((t: any) => [
      t.action_taken,
      t.old_entity_contents.status,
      t.new_entity_contents.status,
    ]);
    assert.deepEqual(kinds.sort(), [
      ['update', 'acknowledged', 'cleared'],
      ['update', 'open', 'acknowledged'],
    ]);
    // Every timestamp of the contents follows timestamp_format, those in the alert's data too.
    const asText = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Alert', entity_key: alert.alert_key, timestamp_format: 'str', time_zone: 'UTC' },
    });
    const text = /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/;
    const clearing = asText.body.audit_trails.find((t: any) => t.new_entity_contents.status === 'cleared');
    const contents = clearing.new_entity_contents;
    for (const member of ['created_at', 'acknowledged_at', 'cleared_at']) assert.match(contents[member], text, member);
    assert.match(contents.data.thing.created_at, text);
    assert.match(contents.data.event.timestamp, text);
    assert.equal(contents.data.event.data.v, 9, "the event's own data as it was");
  });

  it('when an open alert is cleared straight away then that is allowed, with the comment', async () => {
    const token = await ctx.api.adminToken();
    const { alert } = await ruleAlert(token);
    const cleared = await step(token, alert.alert_key, 'clear', { comment: 'false alarm' });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.alert.status, 'cleared');
    assert.equal(cleared.body.alert.acknowledged_at, null);
    assert.equal(cleared.body.alert.comment, 'false alarm');
  });

  it('when a step gives a null comment then none was given: the comment stays null, or the last one', async () => {
    const token = await ctx.api.adminToken();
    const { alert } = await ruleAlert(token);
    const acknowledged = await step(token, alert.alert_key, 'acknowledge', { comment: null });
    assert.equal(acknowledged.status, 200, acknowledged.text);
    assert.equal(acknowledged.body.alert.comment, null);
    const other = (await ruleAlert(token)).alert;
    assert.equal((await step(token, other.alert_key, 'acknowledge', { comment: 'on it' })).status, 200);
    const cleared = await step(token, other.alert_key, 'clear', { comment: null });
    assert.equal(cleared.body.alert.comment, 'on it');
  });

  it("when an API key acknowledges and clears an alert then each step records its creator's e-mail, and the audit trail names the key", async () => {
    const token = await ctx.api.adminToken();
    const { alert } = await ruleAlert(token);
    const creator = await userWithAbilities(ctx.api, token, [91, 93, 142]);
    const name = unique('key');
    const key = await ctx.api.request('POST', '/api/v3/api_keys', {
      token: creator.token,
      body: { api_key: { name } },
    });
    assert.equal(key.status, 200, key.text);
    const keyToken = key.body.api_key.token as string;
    const acknowledged = await step(keyToken, alert.alert_key, 'acknowledge');
    assert.equal(acknowledged.status, 200, acknowledged.text);
    assert.equal(acknowledged.body.alert.acknowledged_by, creator.email);
    const cleared = await step(keyToken, alert.alert_key, 'clear');
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.alert.cleared_by, creator.email);
    const read = await ctx.api.request('GET', `/api/v3/alerts/${alert.alert_key}`, { token });
    assert.deepEqual([read.body.alert.acknowledged_by, read.body.alert.cleared_by], [creator.email, creator.email]);
    const trails = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Alert', entity_key: alert.alert_key },
    });
    assert.deepEqual(
      trails.body.audit_trails.map((t: { user_name: string }) => t.user_name),
      [`api key ${name}`, `api key ${name}`],
    );
  });

  it('when two users acknowledge one alert at once then one succeeds and the other gets a 409', async () => {
    const token = await ctx.api.adminToken();
    const { alert } = await ruleAlert(token);
    const answers = await Promise.all([
      step(token, alert.alert_key, 'acknowledge', { comment: 'first' }),
      step(token, alert.alert_key, 'acknowledge', { comment: 'second' }),
    ]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409]);
    const trails = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Alert', entity_key: alert.alert_key },
    });
    assert.equal(trails.body.total_count, 1);
  });

  it('when the caller lacks alert update, names a missing alert or one of another organisation then it is 403 or 404 and nothing changes', async () => {
    const token = await ctx.api.adminToken();
    const { alert } = await ruleAlert(token);
    const reader = await userWithAbilities(ctx.api, token, [91]);
    const forbidden = await step(reader.token, alert.alert_key, 'acknowledge');
    assert.equal(forbidden.status, 403, forbidden.text);
    assert.equal((await step(reader.token, alert.alert_key, 'clear')).status, 403);
    const missing = await step(token, 'nosuchalert', 'clear');
    assert.equal(missing.status, 404, missing.text);
    assert.equal(missing.body.errors[0].code, 'not_found');
    const child = await childOrganisation(ctx.api, token);
    const other = await step(child.token, alert.alert_key, 'acknowledge');
    assert.equal(other.status, 404, other.text);
    const tooLong = await step(token, alert.alert_key, 'acknowledge', { comment: 'x'.repeat(2001) });
    assert.equal(tooLong.status, 400, tooLong.text);
    const read = await ctx.api.request('GET', `/api/v3/alerts/${alert.alert_key}`, { token });
    assert.equal(read.body.alert.status, 'open');
    assert.equal(read.body.alert.comment, null);
  });

  it('when alerts are listed by status and rule_key then only those are listed', async () => {
    const token = await ctx.api.adminToken();
    const first = await ruleAlert(token);
    const second = await ruleAlert(token);
    const third = await ruleAlert(token);
    assert.equal((await step(token, second.alert.alert_key, 'acknowledge')).status, 200);
    assert.equal((await step(token, third.alert.alert_key, 'clear')).status, 200);
    const keys = [first, second, third].map((a) => a.alert.alert_key);
    const listed = async (query: Record<string, unknown>, body?: object) => {
      const list = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { per: 1000, ...query }, body });
      assert.equal(list.status, 200, list.text);
      return (list.body.alerts as { alert_key: string }[]).map((a) => a.alert_key).filter((k) => keys.includes(k));
    };
    assert.deepEqual(await listed({ status: 'open' }), [keys[0]]);
    assert.deepEqual((await listed({ status: 'open,acknowledged' })).sort(), [keys[0], keys[1]].sort());
    assert.deepEqual(await listed({}, { status: ['cleared'] }), [keys[2]]);
    assert.deepEqual(await listed({ rule_key: second.ruleKey }), [keys[1]]);
    // An empty list filters nothing, the same on both stores.
    for (const [query, body] of [
      [{ status: '' }],
      [{}, { status: [] }],
      [{ alert_type: '' }],
      [{}, { alert_type: [] }],
    ]) {
      assert.deepEqual(
        (await listed(query as Record<string, unknown>, body)).sort(),
        [...keys].sort(),
        JSON.stringify([query, body]),
      );
    }
    const none = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { rule_key: 'nosuchrule' } });
    assert.equal(none.status, 200, none.text);
    assert.equal(none.body.total_count, 0);
    const bad = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { status: 'closed' } });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.errors[0].param, /^status/);
  });

  it('when alerts are acknowledged and cleared then subscribers of alerts are told of each change', async () => {
    const token = await ctx.api.adminToken();
    const client = await SocketClient.open(ctx.api.url, token);
    try {
      await client.subscribe('alerts', 'alerts', { alert_type: [2] });
      const { alert, thingKey } = await ruleAlert(token);
      const created = await client.next((m) => m.type === 'alert' && m.alert.alert_key === alert.alert_key);
      assert.equal(created.change, 'created');
      assert.equal(created.alert.status, 'open');
      assert.equal((await step(token, alert.alert_key, 'acknowledge', { comment: 'mine' })).status, 200);
      const acknowledged = await client.next((m) => m.type === 'alert' && m.alert.alert_key === alert.alert_key);
      assert.equal(acknowledged.change, 'updated');
      assert.equal(acknowledged.alert.status, 'acknowledged');
      assert.equal(acknowledged.alert.comment, 'mine');
      assert.equal(acknowledged.alert.thing_key, thingKey);
      assert.equal((await step(token, alert.alert_key, 'clear')).status, 200);
      const cleared = await client.next((m) => m.type === 'alert' && m.alert.alert_key === alert.alert_key);
      assert.equal(cleared.alert.status, 'cleared');
      assert.equal(cleared.alert.cleared_by, ADMIN_EMAIL);
    } finally {
      client.close();
    }
  });

  it('when a device acknowledges an instruction with PUT then its alert is updated as before and stays open', async () => {
    const token = await ctx.api.adminToken();
    const device = new Device(ctx.api.url, await createKeyPair(ctx.api, token));
    const thingKey = unique('valve');
    assert.equal((await device.register({ thing_key: thingKey, name: 'Valve', bi_directional: true })).status, 200);
    const sent = await ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
      token,
      body: { instruction: { name: 'close', definition: { valve: 'close' } } },
    });
    assert.equal(sent.status, 200, sent.text);
    const alertKey = sent.body.instruction.alert_key as string;
    const put = await device.put(`/api/v3/alerts/${alertKey}`, {
      alert: { message: 'closed', alert_type: 0, data: { execution_status: 'success' } },
    });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body, {});
    const read = await ctx.api.request('GET', `/api/v3/alerts/${alertKey}`, { token });
    assert.equal(read.body.alert.message, 'closed');
    assert.equal(read.body.alert.status, 'open');
    assert.equal(read.body.alert.rule_key, null);
    assert.equal(read.body.alert.instruction_key, sent.body.instruction.instruction_key);
    assert.equal(read.body.alert.data.execution_status, 'success');
  });
});
