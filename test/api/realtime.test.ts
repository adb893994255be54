import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { eventually } from '../support/peers.ts';
import { type Message, SocketClient, StreamClient } from '../support/realtime.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

/** An upgrade request written as is, and the answer read until the server closes or 2 s pass. */
async function rawUpgrade(
  base: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; head: string; body: string }> {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  const lines = [`GET ${path} HTTP/1.1`, `Host: ${url.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  await Promise.race([once(socket, 'close'), sleep(2000)]);
  socket.destroy();
  const [head = '', body = ''] = text.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), head, body };
}

describeOnStores('realtime push', (ctx) => {
  /** A device of a new key pair and a thing of its own, registered. */
  async function newDevice(extra: object = {}) {
    const token = await ctx.api.adminToken();
    const pair = await createKeyPair(ctx.api, token);
    const device = new Device(ctx.api.url, pair);
    const thingKey = unique('pump');
    const registered = await device.register({ thing_key: thingKey, name: 'Pump', ...extra });
    assert.equal(registered.status, 200, registered.text);
    return { device, thingKey };
  }

  const isEvent = (thingKey: string) => (m: Message) => m.type === 'event' && m.thing_key === thingKey;

  it('when a client subscribes to a thing then each event stored for it arrives once committed, and only its own', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const other = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    assert.deepEqual(await client.subscribe('mine', 'events', { thing_keys: [thingKey] }), {
      type: 'subscribed',
      id: 'mine',
    });
    const sent = await device.event({ thing_key: thingKey, timestamp: 1_700_000_000_000, data: { temperature: 71.5 } });
    assert.equal(sent.status, 200, sent.text);
    await other.device.event({ thing_key: other.thingKey, data: { temperature: 1 } });
    const event = await client.next(isEvent(thingKey));
    assert.deepEqual(event, {
      type: 'event',
      id: 'mine',
      thing_key: thingKey,
      timestamp: 1_700_000_000,
      data: { temperature: 71.5 },
    });
    await device.event({ thing_key: thingKey, data: { temperature: 72 } });
    await client.next(isEvent(thingKey));
    assert.equal(client.messages.filter((m) => m.thing_key === other.thingKey).length, 0, 'another thing');
    client.close();
  });

  it('when events of a bulk arrive then a subscriber gets them in order; metrics keep only those metrics', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('all', 'events', { thing_keys: [thingKey], timestamp_format: 'str', time_zone: 'UTC' });
    await client.subscribe('speed', 'events', { thing_keys: [thingKey], metrics: ['speed'] });
    const events = Array.from({ length: 20 }, (_, i) => ({
      thing_key: thingKey,
      timestamp: 1_700_000_000_000 + i * 1000,
      data: i % 2 === 0 ? { speed: i } : { load: i },
    }));
    const sent = await device.event({ events });
    assert.equal(sent.status, 200, sent.text);
    const all: Message[] = [];
    for (let i = 0; i < 20; i++) all.push(await client.next((m) => m.type === 'event' && m.id === 'all'));
    assert.deepEqual(
      all.map((m) => m.data),
      events.map((e) => e.data),
    );
    assert.equal(all[0]?.timestamp, '2023/11/14 22:13:20');
    await sleep(200);
    const speeds = client.messages.filter((m) => m.type === 'event' && m.id === 'speed');
    assert.deepEqual(
      speeds.map((m) => m.data),
      events.filter((e) => 'speed' in e.data).map((e) => e.data),
    );
    client.close();
  });

  it('when a subscription names no thing then it gets every thing of the organisation, or of a group or template', async () => {
    const token = await ctx.api.adminToken();
    const a = await newDevice();
    const b = await newDevice();
    const group = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('group'), group_type: 1, thing_keys: [b.thingKey] } },
    });
    assert.equal(group.status, 200, group.text);
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('every', 'events');
    // An empty list names no thing either, as an empty thing_keys of a rule watches every thing.
    await client.subscribe('empty', 'events', { thing_keys: [] });
    await client.subscribe('group', 'events', { group_key: group.body.group.group_key });
    await a.device.event({ thing_key: a.thingKey, data: { n: 1 } });
    await b.device.event({ thing_key: b.thingKey, data: { n: 2 } });
    await client.next((m) => m.id === 'every' && m.thing_key === a.thingKey);
    await client.next((m) => m.id === 'every' && m.thing_key === b.thingKey);
    const inGroup = await client.next((m) => m.id === 'group');
    assert.equal(inGroup.thing_key, b.thingKey);
    await sleep(200);
    assert.deepEqual(
      client.messages.filter((m) => m.id === 'empty' && m.type === 'event').map((m) => m.thing_key),
      [a.thingKey, b.thingKey],
    );
    assert.equal(client.messages.filter((m) => m.id === 'group' && m.thing_key === a.thingKey).length, 0);
    client.close();
  });

  it('when subscriptions of things come and go then the things watched follow, and other subscriptions are untouched', async () => {
    const token = await ctx.api.adminToken();
    const { thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('one', 'things', { thing_keys: [thingKey] });
    await client.subscribe('all', 'things');
    client.send({ type: 'unsubscribe', id: 'all' });
    await client.next((m) => m.type === 'unsubscribed');
    const updated = await ctx.api.request('PUT', `/api/v3/things/${thingKey}`, {
      token,
      body: { thing: { description: 'still watched' } },
    });
    assert.equal(updated.status, 200);
    assert.equal((await client.next((m) => m.type === 'thing')).id, 'one');
    client.send({ type: 'unsubscribe', id: 'one' });
    await client.next((m) => m.type === 'unsubscribed');
    await ctx.api.request('PUT', `/api/v3/things/${thingKey}`, { token, body: { thing: { description: 'not' } } });
    await sleep(200);
    assert.equal(client.pending((m) => m.type === 'thing').length, 0);
    client.close();
  });

  it('when a client unsubscribes then it is answered and gets nothing more of that subscription', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('s', 'events', { thing_keys: [thingKey] });
    client.send({ type: 'unsubscribe', id: 's' });
    assert.deepEqual(await client.next((m) => m.type === 'unsubscribed'), { type: 'unsubscribed', id: 's' });
    await device.event({ thing_key: thingKey, data: { n: 1 } });
    client.send({ type: 'unsubscribe', id: 's' });
    const again = await client.next((m) => m.type === 'error');
    assert.equal(again.code, 'not_found');
    assert.equal(client.messages.filter((m) => m.type === 'event').length, 0);
    client.close();
  });

  it('when things are created, updated and deleted through the API then subscribers of things are told', async () => {
    const token = await ctx.api.adminToken();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('t', 'things', { timestamp_format: 'int' });
    const thing = await createThing(ctx.api, token, { name: 'Boiler' });
    const created = await client.next((m) => m.type === 'thing' && m.change === 'created');
    assert.deepEqual(created, {
      type: 'thing',
      id: 't',
      thing_key: thing.thing_key,
      alive: false,
      last_event: null,
      last_beat: null,
      change: 'created',
    });
    const updated = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { description: 'basement' } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal((await client.next((m) => m.type === 'thing' && m.change === 'updated')).thing_key, thing.thing_key);
    const deleted = await ctx.api.request('DELETE', `/api/v3/things/${thing.thing_key}`, { token });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await client.next((m) => m.type === 'thing' && m.change === 'deleted')).thing_key, thing.thing_key);
    client.close();
  });

  it('when many subscriptions of several connections watch one template then a thing added to it reaches each, as long as any watches', async () => {
    const token = await ctx.api.adminToken();
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('shared') } },
    });
    const templateKey = template.body.thing_template.thing_template_key as string;
    const clients = [await SocketClient.open(ctx.api.url, token), await SocketClient.open(ctx.api.url, token)];
    for (const client of clients) {
      for (let n = 0; n < 5; n++) await client.subscribe(`t${n}`, 'events', { thing_template_key: templateKey });
    }
    // Added after the subscriptions: their members are read again.
    const pair = await createKeyPair(ctx.api, token);
    const device = new Device(ctx.api.url, pair);
    const { thing_key: thingKey } = await createThing(ctx.api, token, { thing_template_key: templateKey });
    await sleep(300);
    assert.equal((await device.event({ thing_key: thingKey, data: { n: 1 } })).status, 200);
    for (const client of clients) {
      const ids = new Set<string>();
      for (let n = 0; n < 5; n++) ids.add(String((await client.next(isEvent(thingKey))).id));
      assert.deepEqual([...ids].sort(), ['t0', 't1', 't2', 't3', 't4']);
    }
    // The first connection goes; the second's subscriptions still follow the template's members.
    const [first, second] = clients as [SocketClient, SocketClient];
    first.close();
    await sleep(200);
    const { thing_key: later } = await createThing(ctx.api, token, { thing_template_key: templateKey });
    await sleep(300);
    assert.equal((await device.event({ thing_key: later, data: { n: 2 } })).status, 200);
    assert.equal((await second.next(isEvent(later))).type, 'event');
    second.close();
  });

  it('when a thing is heard from after a silence, and then falls silent, then its alive flips are told', async () => {
    const token = await ctx.api.adminToken();
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('fast'), heartbeat_interval: 1 } },
    });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key as string;
    const { device } = await newDevice();
    const { thing_key: thingKey } = await createThing(ctx.api, token, { thing_template_key: templateKey });
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('t', 'things', { thing_template_key: templateKey });
    await sleep(1200); // the watch has seen the thing silent
    const beat = await device.heartbeat({ thing_key: thingKey });
    assert.equal(beat.status, 200, beat.text);
    const up = await client.next((m) => m.type === 'thing' && m.change === 'alive' && m.alive === true, 4000);
    assert.equal(up.thing_key, thingKey);
    assert.equal(typeof up.last_beat, 'number');
    const down = await client.next((m) => m.type === 'thing' && m.change === 'alive' && m.alive === false, 6000);
    assert.equal(down.thing_key, thingKey);
    client.close();
  });

  it('when a thing is first heard from right after the subscribed answer then its alive flip is told', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    const stream = await StreamClient.open(ctx.api.url, { topic: 'things', thing_keys: thingKey }, token);
    assert.equal(stream.status, 200);
    assert.equal((await client.subscribe('t', 'things', { thing_keys: [thingKey] })).type, 'subscribed');
    const sent = await device.event({ thing_key: thingKey, data: { n: 1 } });
    assert.equal(sent.status, 200, sent.text);
    const isUp = (m: Message) => m.type === 'thing' && m.change === 'alive' && m.thing_key === thingKey;
    const up = await client.next(isUp, 4000);
    assert.equal(up.alive, true);
    assert.equal((await stream.next(isUp, 4000)).alive, true, 'over SSE too');
    client.close();
    stream.close();
  });

  it('when a thing updated through the API already shows it alive then an alive message still follows the updated one', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('t', 'things', { thing_keys: [thingKey] });
    await sleep(1200); // the watch has seen the thing silent
    const sent = await device.event({ thing_key: thingKey, data: { n: 1 } });
    assert.equal(sent.status, 200, sent.text);
    const updated = await ctx.api.request('PUT', `/api/v3/things/${thingKey}`, {
      token,
      body: { thing: { description: 'heard from' } },
    });
    assert.equal(updated.status, 200, updated.text);
    const told = await client.next((m) => m.type === 'thing' && m.change === 'updated');
    assert.equal(told.alive, true);
    const up = await client.next((m) => m.type === 'thing' && m.change === 'alive', 4000);
    assert.equal(up.thing_key, thingKey);
    assert.equal(up.alive, true);
    client.close();
  });

  it('when a metrics filter names __proto__ and an event has a member of that name then it is that member, and nothing else changes', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('p', 'events', { thing_keys: [thingKey], metrics: ['__proto__.polluted', 'temp'] });
    // JSON's own member, as a device sends it (an object literal would set the prototype instead).
    const data = JSON.parse('{"__proto__":{"polluted":"yes"},"temp":1}');
    const sent = await device.event({ thing_key: thingKey, timestamp: 1_700_000_000_000, data });
    assert.equal(sent.status, 200, sent.text);
    const seen = await client.next((m) => m.type === 'event' && m.id === 'p');
    assert.equal(JSON.stringify(seen.data), '{"__proto__":{"polluted":"yes"},"temp":1}');
    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
    const read = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token,
      body: { thing_key: thingKey, metrics: ['__proto__.polluted'] },
    });
    assert.equal(read.status, 200, read.text);
    assert.match(read.text, /"data":\{"__proto__":\{"polluted":"yes"\}\}/);
    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
    const next = await device.event({ thing_key: thingKey, timestamp: 1_700_000_001_000, data: { temp: 2 } });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual((await client.next((m) => m.type === 'event' && m.id === 'p')).data, { temp: 2 });
    client.close();
  });

  it('when events are filtered by a dotted metric then only that nested value arrives, nesting kept, over WebSocket and SSE', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('d', 'events', { thing_keys: [thingKey], metrics: ['machine.status'] });
    await client.subscribe('two', 'events', { thing_keys: [thingKey], metrics: ['machine.rpm', 'temp'] });
    const stream = await StreamClient.open(
      ctx.api.url,
      { topic: 'events', thing_keys: thingKey, metrics: 'machine.status' },
      token,
    );
    assert.equal(stream.status, 200);
    const events = [
      { timestamp: 1_700_000_000_000, data: { temp: 1, machine: { status: 'fault', rpm: 7 } } },
      { timestamp: 1_700_000_001_000, data: { temp: 2, machine: { rpm: 8 } } },
      { timestamp: 1_700_000_002_000, data: { 'machine.status': 'literal', machine: 'flat' } },
      { timestamp: 1_700_000_003_000, data: { machine: { status: 'ok' } } },
    ];
    const sent = await device.event({ events: events.map((e) => ({ thing_key: thingKey, ...e })) });
    assert.equal(sent.status, 200, sent.text);
    const first = await client.next((m) => m.type === 'event' && m.id === 'd');
    assert.deepEqual(first, {
      type: 'event',
      id: 'd',
      thing_key: thingKey,
      timestamp: 1_700_000_000,
      data: { machine: { status: 'fault' } },
    });
    assert.deepEqual((await client.next((m) => m.type === 'event' && m.id === 'd')).data, {
      machine: { status: 'ok' },
    });
    assert.deepEqual((await stream.next((m) => m.type === 'event')).data, { machine: { status: 'fault' } });
    assert.deepEqual((await stream.next((m) => m.type === 'event')).data, { machine: { status: 'ok' } });
    await sleep(200);
    assert.deepEqual(
      client.messages.filter((m) => m.type === 'event' && m.id === 'd').map((m) => m.timestamp),
      [1_700_000_000, 1_700_000_003],
      'events without a nested machine.status send nothing, as queries read them',
    );
    assert.deepEqual(
      client.messages.filter((m) => m.type === 'event' && m.id === 'two').map((m) => m.data),
      [
        { temp: 1, machine: { rpm: 7 } },
        { temp: 2, machine: { rpm: 8 } },
      ],
    );
    client.close();
    stream.close();
  });

  it('when alerts are raised and updated then subscribers of alerts are told, filtered by alert_type', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('all', 'alerts');
    await client.subscribe('critical', 'alerts', { alert_type: [3] });
    const info = await device.post('/api/v3/alerts.json', {
      alert: { thing_key: thingKey, message: 'door open', alert_type: 0 },
    });
    assert.equal(info.status, 200, info.text);
    const created = await client.next((m) => m.type === 'alert' && m.id === 'all');
    assert.equal(created.change, 'created');
    assert.equal(created.alert.message, 'door open');
    assert.equal(created.alert.thing_key, thingKey);
    assert.equal(created.alert.data.thing.thing_key, thingKey);
    const critical = await device.post('/api/v3/alerts.json', {
      alert: { thing_key: thingKey, message: 'fire', alert_type: 3 },
    });
    assert.equal(critical.status, 200, critical.text);
    assert.equal((await client.next((m) => m.type === 'alert' && m.id === 'critical')).alert.message, 'fire');
    await sleep(200);
    assert.equal(
      client.messages.filter((m) => m.type === 'alert' && m.id === 'critical').length,
      1,
      'the type 0 alert is filtered out',
    );
    client.close();
  });

  it('when a rule raises an alert then its message shows the event timestamp in the subscription time format', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const rule = await ctx.api.request('POST', '/api/v3/rules', {
      token,
      body: { rule: { name: unique('hot'), condition: 'temp > 80', thing_keys: [thingKey], alert_type: 2 } },
    });
    assert.equal(rule.status, 200, rule.text);
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('int', 'alerts', { thing_keys: [thingKey] });
    await client.subscribe('str', 'alerts', { thing_keys: [thingKey], timestamp_format: 'str', time_zone: 'UTC' });
    const sent = await device.event({ thing_key: thingKey, timestamp: 1_700_000_000_000, data: { temp: 90 } });
    assert.equal(sent.status, 200, sent.text);
    const asInt = (await client.next((m) => m.type === 'alert' && m.id === 'int')).alert;
    assert.equal(asInt.rule_key, rule.body.rule.rule_key);
    assert.equal(asInt.timestamp, 1_700_000_000);
    assert.deepEqual(asInt.data.event, { timestamp: 1_700_000_000, data: { temp: 90 } });
    const asText = (await client.next((m) => m.type === 'alert' && m.id === 'str')).alert;
    assert.equal(asText.timestamp, '2023/11/14 22:13:20');
    assert.deepEqual(asText.data.event, { timestamp: '2023/11/14 22:13:20', data: { temp: 90 } });
    assert.equal(asText.data.thing.last_event.timestamp, '2023/11/14 22:13:20');
    client.close();
  });

  it('when an alerts subscription asks for an alert_type outside 0 to 3 then it is refused over WebSocket and SSE', async () => {
    const token = await ctx.api.adminToken();
    const client = await SocketClient.open(ctx.api.url, token);
    for (const alertType of [[7], [1, 4], [-1]]) {
      const answer = await client.subscribe('x', 'alerts', { alert_type: alertType });
      assert.equal(answer.type, 'error', JSON.stringify(alertType));
      assert.equal(answer.code, 'invalid');
      assert.match(answer.message, /^alert_type\.\d must be one of: 0, 1, 2, 3$/);
    }
    assert.equal((await client.subscribe('ok', 'alerts', { alert_type: [0, 3] })).type, 'subscribed');
    client.close();
    for (const alertType of ['9', '1,4']) {
      const stream = await StreamClient.open(ctx.api.url, { topic: 'alerts', alert_type: alertType }, token);
      assert.equal(stream.status, 400, alertType);
      const body = await stream.body();
      assert.equal(body.success, false);
      assert.equal(body.errors[0].code, 'invalid');
      assert.match(body.errors[0].param, /^alert_type\.\d$/);
      assert.equal(body.errors[0].message, 'must be one of: 0, 1, 2, 3');
      assert.equal(typeof body.message, 'string');
    }
    const listed = await ctx.api.request('GET', '/api/v3/alerts', { token, query: { alert_type: '9' } });
    assert.equal(listed.status, 400, 'as the alerts list refuses it');
    assert.equal(listed.body.errors[0].message, 'must be one of: 0, 1, 2, 3');
  });

  it('when an instruction is sent and acknowledged then subscribers of instructions see each status', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice({ bi_directional: true });
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('i', 'instructions', { thing_keys: [thingKey] });
    const sent = await ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
      token,
      body: { instruction: { name: 'Close valve', definition: { valve: 'closed' } } },
    });
    assert.equal(sent.status, 200, sent.text);
    const pending = await client.next((m) => m.type === 'instruction');
    assert.equal(pending.instruction.status, 'pending');
    assert.equal(pending.instruction.instruction_key, sent.body.instruction.instruction_key);
    assert.deepEqual(pending.instruction.definition, { valve: 'closed' });
    const ack = await device.post('/api/v3/alerts.json', {
      alert: { alert_key: sent.body.instruction.alert_key, message: 'closed', alert_type: 0 },
    });
    assert.equal(ack.status, 200, ack.text);
    const acknowledged = await client.next((m) => m.type === 'instruction');
    assert.equal(acknowledged.instruction.status, 'acknowledged');
    client.close();
  });

  it('when the first message authenticates then the socket works; messages before it are refused and it stays open', async () => {
    const token = await ctx.api.adminToken();
    const client = await SocketClient.open(ctx.api.url);
    client.send({ type: 'subscribe', id: 'early', topic: 'events' });
    const early = await client.next((m) => m.type === 'error');
    assert.equal(early.code, 'unauthorized');
    client.send({ type: 'auth', token });
    assert.deepEqual(await client.next(), { type: 'authenticated' });
    assert.equal((await client.subscribe('late', 'events')).type, 'subscribed');
    client.close();
  });

  it('when the first message has a bad token then it is refused and the socket closed with 4401', async () => {
    const client = await SocketClient.open(ctx.api.url);
    client.send({ type: 'auth', token: 'not-a-token' });
    const refused = await client.next();
    assert.equal(refused.type, 'error');
    assert.equal(refused.code, 'unauthorized');
    assert.equal((await client.closed).code, 4401);
  });

  it('when the first message has no token, or not a text one, then the socket is closed with 4401', async () => {
    for (const auth of [{ type: 'auth' }, { type: 'auth', token: 42 }, { type: 'auth', token: '' }]) {
      const client = await SocketClient.open(ctx.api.url);
      client.send(auth);
      assert.equal((await client.next()).code, 'unauthorized', JSON.stringify(auth));
      assert.equal((await client.closed).code, 4401);
    }
  });

  it('when the upgrade carries a bad X-Auth-Token then it is a 401 in the error shape, and no upgrade', async () => {
    const error = await SocketClient.open(ctx.api.url, 'not-a-token').then(
      () => assert.fail('upgraded'),
      (e: { status: number; body: string }) => e,
    );
    assert.equal(error.status, 401);
    assert.equal(JSON.parse(error.body).errors[0].code, 'unauthorized');
    const plain = await ctx.api.request('GET', '/api/v3/ws', { token: await ctx.api.adminToken() });
    assert.equal(plain.status, 426, 'not an upgrade');
    assert.equal(plain.body.success, false);
  });

  it('when an upgrade has a bad handshake header then it is a 400 in the error shape naming the header, at /api/v3/ws and /mqtt', async () => {
    const good = { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    const cases: [Record<string, string>, string][] = [
      [{ ...good, 'sec-websocket-key': 'short', 'sec-websocket-version': '13' }, 'Sec-WebSocket-Key'],
      [{ ...good, 'sec-websocket-version': '14' }, 'Sec-WebSocket-Version'],
      [{ ...good, 'sec-websocket-version': '13', 'sec-websocket-protocol': 'mqtt, mqtt' }, 'Sec-WebSocket-Protocol'],
    ];
    for (const path of ['/api/v3/ws', '/mqtt']) {
      for (const [headers, param] of cases) {
        const answer = await rawUpgrade(ctx.api.url, path, headers);
        assert.equal(answer.status, 400, `${path} ${param}: ${answer.head}`);
        assert.match(answer.head, /content-type: application\/json/i);
        const body = JSON.parse(answer.body);
        assert.equal(body.success, false);
        assert.deepEqual(
          body.errors.map((e: { param: string }) => e.param),
          [param],
        );
        if (param === 'Sec-WebSocket-Version') assert.match(answer.head, /sec-websocket-version: 13, 8/i);
      }
    }
  });

  it('when messages are malformed, of unknown type or ask what they may not then errors answer and the socket stays open', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const foreign = await createThing(ctx.api, child.token, { name: 'Theirs' });
    const reader = await userWithAbilities(ctx.api, token, [11]);
    const client = await SocketClient.open(ctx.api.url, token);
    const errors: [unknown, string][] = [
      ['not json', 'invalid'],
      ['[1,2]', 'invalid'],
      [{ type: 'dance' }, 'invalid'],
      [{ type: 'subscribe' }, 'invalid'],
      [{ type: 'subscribe', id: 'a', topic: 'weather' }, 'invalid'],
      [{ type: 'subscribe', id: 'b', topic: 'events', thing_keys: [foreign.thing_key] }, 'not_found'],
      [{ type: 'subscribe', id: 'c', topic: 'events', group_key: 'no-such-group' }, 'not_found'],
      [{ type: 'subscribe', id: 'd', topic: 'events', thing_template_key: 'no-such-template' }, 'not_found'],
      [{ type: 'subscribe', id: 'e', topic: 'things', metrics: ['x'] }, 'invalid'],
      [{ type: 'subscribe', id: 'e2', topic: 'events', alert_type: [1] }, 'invalid'],
      [{ type: 'subscribe', id: 'f', topic: 'events', time_zone: 'Mars/Olympus' }, 'invalid'],
      [{ type: 'subscribe', id: 'g', topic: 'events', is_oem: 'perhaps' }, 'invalid'],
      [{ type: 'subscribe', id: 'h', topic: 'events', thing_keys: 'x'.repeat(100) }, 'invalid'],
      [{ type: 'auth', token }, 'invalid'],
      [{ type: 'unsubscribe' }, 'invalid'],
    ];
    for (const [sent, code] of errors) {
      client.send(sent);
      const answer = await client.next((m) => m.type === 'error' || m.type === 'subscribed');
      assert.equal(answer.type, 'error', JSON.stringify(sent));
      assert.equal(answer.code, code, JSON.stringify([sent, answer]));
      assert.equal(typeof answer.message, 'string');
    }
    client.socket.send(Buffer.from([0, 1, 2]), { binary: true });
    assert.equal((await client.next((m) => m.type === 'error')).code, 'invalid');
    await client.subscribe('ok', 'events');
    assert.equal((await client.subscribe('ok', 'alerts')).code, 'invalid', 'an id in use');

    const limited = await SocketClient.open(ctx.api.url, reader.token);
    assert.equal((await limited.subscribe('t', 'things')).type, 'subscribed');
    const denied = await limited.subscribe('e', 'events');
    assert.equal(denied.type, 'error');
    assert.equal(denied.code, 'forbidden');
    const childClient = await SocketClient.open(ctx.api.url, child.token);
    const notOem = await childClient.subscribe('o', 'things', { is_oem: true });
    assert.equal(notOem.code, 'forbidden', 'is_oem outside an OEM organisation');
    childClient.close();
    client.close();
    limited.close();
  });

  it('when an OEM admin subscribes with is_oem then its children’s events come too', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const pair = await createKeyPair(ctx.api, child.token);
    const childDevice = new Device(ctx.api.url, pair);
    const thingKey = unique('child-pump');
    assert.equal((await childDevice.register({ thing_key: thingKey, name: 'Child pump' })).status, 200);
    const own = await SocketClient.open(ctx.api.url, token);
    await own.subscribe('own', 'events');
    await own.subscribe('oem', 'events', { is_oem: true });
    await childDevice.event({ thing_key: thingKey, data: { n: 1 } });
    assert.equal((await own.next(isEvent(thingKey))).id, 'oem');
    await sleep(200);
    assert.equal(own.messages.filter((m) => m.type === 'event' && m.id === 'own').length, 0, 'only its own');
    own.close();
  });

  it('when an organisation stops being an OEM one then its is_oem subscriptions end with forbidden', async () => {
    const token = await ctx.api.adminToken();
    const oem = await childOrganisation(ctx.api, token, { isOem: true });
    const client = await SocketClient.open(ctx.api.url, oem.token);
    await client.subscribe('own', 'events');
    assert.equal((await client.subscribe('children', 'events', { is_oem: true })).type, 'subscribed');
    const demoted = await ctx.api.request('PUT', `/api/v3/organisations/${oem.organisationKey}`, {
      token,
      body: { organisation: { is_oem: false } },
    });
    assert.equal(demoted.status, 200, demoted.text);
    const ended = await client.next((m) => m.type === 'error' && m.id === 'children');
    assert.equal(ended.code, 'forbidden');
    client.send({ type: 'unsubscribe', id: 'own' });
    assert.equal((await client.next((m) => m.type === 'unsubscribed')).id, 'own', 'its own stayed');
    client.close();
  });

  it('when a socket subscribes many times then it holds at most 100 subscriptions and keeps working', async () => {
    const token = await ctx.api.adminToken();
    const client = await SocketClient.open(ctx.api.url, token);
    for (let i = 0; i < 1000; i++) client.send({ type: 'subscribe', id: `s${i}`, topic: 'alerts' });
    const answers: Message[] = [];
    for (let i = 0; i < 1000; i++)
      answers.push(await client.next((m) => m.type === 'subscribed' || m.type === 'error'));
    assert.equal(answers.filter((m) => m.type === 'subscribed').length, 100);
    assert.match(
      answers.find((m) => m.type === 'error')?.message,
      /one subscription too many: a connection holds at most 100/,
    );
    client.send({ type: 'unsubscribe', id: 's0' });
    await client.next((m) => m.type === 'unsubscribed');
    assert.equal((await client.subscribe('again', 'alerts')).type, 'subscribed');
    client.close();
  });

  it('when a frame is larger than allowed then the socket is closed with 1009 and the server goes on', async () => {
    const token = await ctx.api.adminToken();
    const client = await SocketClient.open(ctx.api.url, token);
    client.send({ type: 'subscribe', id: 'big', topic: 'events', padding: 'x'.repeat(200_000) });
    assert.equal((await client.closed).code, 1009);
    const next = await SocketClient.open(ctx.api.url, token);
    assert.equal((await next.subscribe('fine', 'events')).type, 'subscribed');
    next.close();
  });

  it('when the token is signed out or its user deleted then the socket is closed with 4401', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [121]);
    const client = await SocketClient.open(ctx.api.url, user.token);
    await client.subscribe('e', 'events');
    const out = await ctx.api.request('DELETE', '/api_sign_out', { token: user.token });
    assert.equal(out.status, 200, out.text);
    assert.equal((await client.closed).code, 4401);
    assert.equal(client.messages.at(-1)?.code, 'unauthorized');

    const other = await userWithAbilities(ctx.api, token, [121]);
    const second = await SocketClient.open(ctx.api.url);
    second.send({ type: 'auth', token: other.token });
    await second.next((m) => m.type === 'authenticated');
    const deleted = await ctx.api.request('DELETE', `/api/v3/users/${other.userKey}`, { token });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await second.closed).code, 4401);
  });

  it('when a role loses the permission a subscription needs then that subscription ends with forbidden', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [11, 91]);
    const client = await SocketClient.open(ctx.api.url, user.token);
    await client.subscribe('things', 'things');
    await client.subscribe('alerts', 'alerts');
    const changed = await ctx.api.request('PUT', `/api/v3/roles/${user.role.role_key}`, {
      token,
      body: { role: { abilities: [11] } },
    });
    assert.equal(changed.status, 200, changed.text);
    const ended = await client.next((m) => m.type === 'error' && m.id === 'alerts');
    assert.equal(ended.code, 'forbidden');
    client.send({ type: 'unsubscribe', id: 'things' });
    assert.equal((await client.next((m) => m.type === 'unsubscribed')).id, 'things', 'the other one stayed');
    client.close();
  });

  it('when a role loses the permission of a stream then the stream ends, told why, and gives back its connection', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [11, 91]);
    const stream = await StreamClient.open(ctx.api.url, { topic: 'alerts' }, user.token);
    assert.equal(stream.status, 200);
    const changed = await ctx.api.request('PUT', `/api/v3/roles/${user.role.role_key}`, {
      token,
      body: { role: { abilities: [11] } },
    });
    assert.equal(changed.status, 200, changed.text);
    const ended = await stream.next((m) => m.type === 'error');
    assert.equal(ended.code, 'forbidden');
    await Promise.race([stream.ended, sleep(5000).then(() => assert.fail('the stream stays open'))]);
    // Its slot is given back: as many streams as a user may hold open again.
    const again = await StreamClient.open(ctx.api.url, { topic: 'things' }, user.token);
    assert.equal(again.status, 200);
    again.close();
  });

  it("when a stream is asked with HEAD then the answer ends at once, with a stream's headers and no subscription", async () => {
    const token = await ctx.api.adminToken();
    const head = await Promise.race([
      ctx.api.request('HEAD', '/api/v3/stream', { token, query: { topic: 'events' } }),
      sleep(5000).then(() => assert.fail('HEAD is not answered')),
    ]);
    assert.equal(head.status, 200);
    assert.match(String(head.headers['content-type']), /^text\/event-stream/);
    assert.equal((await ctx.api.request('HEAD', '/api/v3/stream', { query: { topic: 'events' } })).status, 401);
  });

  it('when a stream is opened with a token parameter then its messages are SSE events named by type', async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const stream = await StreamClient.open(ctx.api.url, { topic: 'events', thing_keys: thingKey, token });
    assert.equal(stream.status, 200);
    await device.event({ thing_key: thingKey, data: { pressure: 2 } });
    const event = await stream.next((m) => m.type === 'event');
    assert.equal(event.__event, 'event');
    assert.equal(event.__id, 'events');
    assert.equal(event.id, 'events');
    assert.deepEqual(event.data, { pressure: 2 });
    stream.close();
  });

  it('when a stream is refused then it is an error answer before any stream: 401, 400, 403, 404', async () => {
    const token = await ctx.api.adminToken();
    const reader = await userWithAbilities(ctx.api, token, [11]);
    const cases: [Record<string, string>, string | undefined, number][] = [
      [{ topic: 'events' }, undefined, 401],
      [{ topic: 'events', token: 'bad' }, undefined, 401],
      [{ topic: 'weather' }, token, 400],
      [{}, token, 400],
      [{ topic: 'events', alert_type: 'x' }, token, 400],
      [{ topic: 'events' }, reader.token, 403],
      [{ topic: 'events', thing_keys: 'nope' }, token, 404],
      [{ topic: 'alerts', group_key: 'nope' }, token, 404],
    ];
    for (const [query, header, status] of cases) {
      const stream = await StreamClient.open(ctx.api.url, query, header);
      assert.equal(stream.status, status, JSON.stringify(query));
      const body = await stream.body();
      assert.equal(body.success, false);
      assert.equal(typeof body.errors[0].code, 'string');
    }
  });

  it('when the token of a stream is signed out then the stream ends', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [91]);
    const stream = await StreamClient.open(ctx.api.url, { topic: 'alerts' }, user.token);
    assert.equal(stream.status, 200);
    await ctx.api.request('DELETE', '/api_sign_out', { token: user.token });
    await stream.ended;
    assert.equal(stream.messages.at(-1)?.code, 'unauthorized');
  });

  it('when a connection never authenticates then it is closed after 10 seconds', { timeout: 20_000 }, async () => {
    const client = await SocketClient.open(ctx.api.url);
    const started = Date.now();
    const { code } = await client.closed;
    assert.equal(code, 4401);
    assert.ok(Date.now() - started >= 9000, 'not before its time');
  });

  it("when a change is told without its detail (another instance's, too large for a notice) then it is read back from the store", async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice({ bi_directional: true });
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('e', 'events', { thing_keys: [thingKey] });
    await client.subscribe('t', 'things', { thing_keys: [thingKey] });
    await client.subscribe('a', 'alerts', { thing_keys: [thingKey] });
    await client.subscribe('i', 'instructions', { thing_keys: [thingKey] });
    await device.event({ thing_key: thingKey, timestamp: 1_700_000_000_000, data: { level: 3 } });
    const stored = await client.next(isEvent(thingKey));
    const raised = await device.post('/api/v3/alerts.json', {
      alert: { thing_key: thingKey, message: 'low', alert_type: 1 },
    });
    const alert = await client.next((m) => m.type === 'alert');
    const sent = await ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
      token,
      body: { instruction: { name: 'Fill', definition: { valve: 'open' } } },
    });
    await client.next((m) => m.type === 'instruction');
    assert.equal(raised.status, 200);
    const feed = ctx.api.server.store.changes;
    const key = await organisationOf(thingKey);
    feed.tell([
      {
        entityType: 'Event',
        organisationKey: key,
        entityKey: null,
        action: 'create',
        remote: true,
        detail: [
          { thing_key: thingKey, thing_template_key: '', timestamp: 1_700_000_000_000, data: null, partial: true },
        ],
      },
      { entityType: 'Thing', organisationKey: key, entityKey: thingKey, action: 'update', remote: true },
      { entityType: 'Alert', organisationKey: key, entityKey: alert.alert.alert_key, action: 'update', remote: true },
      {
        entityType: 'Instruction',
        organisationKey: key,
        entityKey: sent.body.instruction.instruction_key,
        action: 'update',
        remote: true,
      },
      { entityType: 'Thing', organisationKey: key, entityKey: thingKey, action: 'delete', remote: true },
    ]);
    assert.deepEqual((await client.next(isEvent(thingKey))).data, stored.data);
    const thing = await client.next((m) => m.type === 'thing' && m.change === 'updated');
    assert.equal(thing.last_event.timestamp, 1_700_000_000);
    assert.equal((await client.next((m) => m.type === 'alert')).alert.message, 'low');
    assert.equal((await client.next((m) => m.type === 'instruction')).instruction.status, 'pending');
    const gone = await client.next((m) => m.type === 'thing' && m.change === 'deleted');
    assert.deepEqual([gone.alive, gone.last_event, gone.last_beat], [false, null, null]);
    client.close();
  });

  /** The organisation of a thing, read from the store. */
  async function organisationOf(thingKey: string): Promise<string> {
    const row = await ctx.api.server.store.db
      .selectFrom('things')
      .select('organisation_key')
      .where('thing_key', '=', thingKey)
      .executeTakeFirstOrThrow();
    return row.organisation_key;
  }

  it("when a thing is created as a member of a dynamic group then the group's subscribers get its created message and first event", async () => {
    const token = await ctx.api.adminToken();
    const prefix = unique('grp');
    const group = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('group'), group_type: 2, thing_expression: `thing_key contains '${prefix}'` } },
    });
    assert.equal(group.status, 200, group.text);
    const groupKey = group.body.group.group_key as string;
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('things', 'things', { group_key: groupKey });
    await client.subscribe('events', 'events', { group_key: groupKey });
    // Registered and sending at once, with no pause for the group's members to be read again.
    const { device, thingKey } = await newDevice();
    const member = `${prefix}-${thingKey}`;
    assert.equal((await device.register({ thing_key: member, name: 'Member' })).status, 200);
    assert.equal((await device.event({ thing_key: member, data: { n: 1 } })).status, 200);
    const created = await client.next((m) => m.type === 'thing' && m.id === 'things');
    assert.deepEqual([created.thing_key, created.change], [member, 'created']);
    const first = await client.next((m) => m.type === 'event' && m.id === 'events');
    assert.deepEqual([first.thing_key, first.data], [member, { n: 1 }]);
    client.close();
  });

  it('when things join a group or a template later then its subscriptions follow, for every topic', async () => {
    const token = await ctx.api.adminToken();
    const first = await newDevice();
    const later = await newDevice();
    const group = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('group'), group_type: 1, thing_keys: [first.thingKey] } },
    });
    const groupKey = group.body.group.group_key as string;
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('tpl') } },
    });
    const templateKey = template.body.thing_template.thing_template_key as string;
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('g', 'events', { group_key: groupKey });
    await client.subscribe('ga', 'alerts', { group_key: groupKey });
    await client.subscribe('ta', 'alerts', { thing_template_key: templateKey });
    await client.subscribe('tt', 'things', { thing_template_key: templateKey });
    const joined = await ctx.api.request('PUT', `/api/v3/groups/${groupKey}`, {
      token,
      body: { group: { thing_keys: [first.thingKey, later.thingKey] } },
    });
    assert.equal(joined.status, 200, joined.text);
    const moved = await ctx.api.request('PUT', `/api/v3/things/${later.thingKey}`, {
      token,
      body: { thing: { thing_template_key: templateKey } },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.equal((await client.next((m) => m.type === 'thing' && m.id === 'tt')).thing_key, later.thingKey);
    await sleep(400); // members are read again shortly after a change
    await later.device.event({ thing_key: later.thingKey, data: { n: 1 } });
    assert.equal((await client.next((m) => m.type === 'event' && m.id === 'g')).thing_key, later.thingKey);
    await later.device.post('/api/v3/alerts.json', {
      alert: { thing_key: later.thingKey, message: 'm', alert_type: 0 },
    });
    const alerts = [await client.next((m) => m.type === 'alert'), await client.next((m) => m.type === 'alert')];
    assert.deepEqual(alerts.map((m) => m.id).sort(), ['ga', 'ta']);
    const removed = await ctx.api.request('DELETE', `/api/v3/groups/${groupKey}`, { token });
    assert.equal(removed.status, 200, removed.text);
    await sleep(400);
    await later.device.post('/api/v3/alerts.json', {
      alert: { thing_key: later.thingKey, message: 'n', alert_type: 0 },
    });
    assert.equal((await client.next((m) => m.type === 'alert')).id, 'ta', 'the group is gone: only the template');
    client.close();
  });

  it('when two servers share a PostgreSQL store then what is stored through one reaches subscribers of the other', {
    skip: ctx.store.name === 'postgres' ? false : 'one server per SQLite store',
  }, async () => {
    const other = await startServer(ctx.store, { storeSettings: ctx.api.storeSettings });
    try {
      const token = await ctx.api.adminToken();
      const { device, thingKey } = await newDevice();
      const client = await SocketClient.open(other.url, token);
      await client.subscribe('e', 'events', { thing_keys: [thingKey] });
      await client.subscribe('a', 'alerts', { thing_keys: [thingKey] });
      await client.subscribe('t', 'things');
      await sleep(300); // the other server hears what this one wants
      const started = Date.now();
      await device.event({ thing_key: thingKey, data: { temperature: 70 } });
      const event = await client.next(isEvent(thingKey), 1000);
      assert.deepEqual(event.data, { temperature: 70 });
      assert.ok(Date.now() - started < 1000);
      // Too large for one notice between instances: read back from the store.
      const large = { blob: 'x'.repeat(20_000), n: 1 };
      await device.event({ thing_key: thingKey, data: large });
      assert.deepEqual((await client.next(isEvent(thingKey), 2000)).data, large);
      // A bulk larger than a notice is split, and arrives whole and in order.
      const events = Array.from({ length: 300 }, (_, i) => ({ thing_key: thingKey, data: { i, pad: 'y'.repeat(50) } }));
      assert.equal((await device.event({ events })).status, 200);
      const got: number[] = [];
      for (let i = 0; i < 300; i++) got.push((await client.next(isEvent(thingKey), 2000)).data.i);
      assert.deepEqual(
        got,
        events.map((e) => e.data.i),
      );
      await device.post('/api/v3/alerts.json', { alert: { thing_key: thingKey, message: 'hot', alert_type: 2 } });
      assert.equal((await client.next((m) => m.type === 'alert', 2000)).alert.message, 'hot');
      const thing = await createThing(ctx.api, token, { name: 'Across' });
      const told = await client.next((m) => m.type === 'thing' && m.thing_key === thing.thing_key, 2000);
      assert.equal(told.change, 'created');
      client.close();
    } finally {
      await other.close();
    }
  });

  it('when a subscriber does not read then the oldest messages are dropped, it is told how many, and the server stays bounded', {
    skip: ctx.store.name === 'sqlite' ? false : 'the same on both stores: the store only feeds it',
  }, async () => {
    const token = await ctx.api.adminToken();
    const { device, thingKey } = await newDevice();
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('slow', 'events', { thing_keys: [thingKey] });
    client.socket.pause();
    // 24,000 events of 1 KB: more than the socket buffers, the in-flight limit and 10,000 waiting hold.
    const pad = 'z'.repeat(1000);
    for (let batch = 0; batch < 24; batch++) {
      const events = Array.from({ length: 1000 }, (_, i) => ({
        thing_key: thingKey,
        timestamp: 1_700_000_000_000 + batch * 1000 + i,
        data: { n: batch * 1000 + i, pad },
      }));
      const sent = await device.event({ events });
      assert.equal(sent.status, 200, sent.text);
    }
    client.socket.resume();
    const overflow = await client.next((m) => m.type === 'overflow', 20_000);
    assert.equal(overflow.id, 'slow');
    assert.ok(overflow.dropped > 0);
    // The newest is kept: it arrives, however long a busy machine takes to deliver what was kept before it.
    await eventually(
      () => client.messages.some((m) => m.type === 'event' && m.data.n === 23_999),
      'the newest event',
      20_000,
    );
    await sleep(500);
    const events = client.messages.filter((m) => m.type === 'event');
    assert.ok(events.length + overflow.dropped <= 24_000);
    assert.ok(events.length < 24_000 - 10_000 + 2000, `${events.length} events arrived: most were dropped`);
    // What came is the newest, in order.
    const numbers = events.map((m) => m.data.n as number);
    assert.deepEqual(
      numbers,
      [...numbers].sort((a, b) => a - b),
    );
    assert.equal(numbers.at(-1), 23_999);
    client.close();
  });
});

describeOnStores(
  'realtime push with short-lived tokens',
  (ctx) => {
    it('when the token of a connection expires while connected then the socket is closed with 4401', {
      timeout: 20_000,
    }, async () => {
      const token = await ctx.api.signIn();
      const client = await SocketClient.open(ctx.api.url, token);
      assert.equal((await client.subscribe('e', 'events')).type, 'subscribed');
      const opened = Date.now();
      const { code } = await client.closed;
      assert.equal(code, 4401);
      assert.ok(Date.now() - opened >= 1500, 'not before the token expired');
      assert.equal(client.messages.at(-1)?.code, 'unauthorized');
    });

    it('when the API description is read then both transports are in it', async () => {
      const document = await ctx.api.request('GET', '/openapi.json');
      assert.equal(document.status, 200);
      assert.ok(document.body.paths['/api/v3/ws']?.get, 'the WebSocket');
      const stream = document.body.paths['/api/v3/stream']?.get;
      assert.ok(stream, 'the stream');
      assert.ok(stream.parameters.some((p: { name: string }) => p.name === 'topic'));
    });
  },
  { env: { TOKEN_MAX_TTL: '2' } },
);
