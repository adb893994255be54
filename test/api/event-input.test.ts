/**
 * What an event may carry besides plain metrics, and where its limits are: waypoints, timestamps as
 * text, new boolean metrics, data that is not an object, bulks over the limit.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, defaultTemplateKey, storedEventCount, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('event input', (ctx) => {
  let device: Device;
  before(async () => {
    device = new Device(ctx.api.url, await createKeyPair(ctx.api, await ctx.api.adminToken()));
  });

  /** A thing's events as stored: epoch milliseconds and the data's text. */
  const storedEvents = async (thingKey: string) =>
    (
      await ctx.api.server.store.db
        .selectFrom('events')
        .innerJoin('things', 'things.thing_id', 'events.thing_id')
        .select(['events.timestamp', 'events.data'])
        .where('things.thing_key', '=', thingKey)
        .orderBy('events.timestamp')
        .execute()
    ).map((e) => ({ timestamp: Number(e.timestamp), data: String(e.data) }));

  const readThing = async (thingKey: string) => {
    const read = await ctx.api.request('GET', `/api/v3/things/${thingKey}`, { token: await ctx.api.adminToken() });
    assert.equal(read.status, 200, read.text);
    return read.body.thing;
  };

  it('when the events of a bulk carry waypoints then the last one becomes the thing’s coordinates, and an event of a waypoint alone is stored', async () => {
    const thingKey = unique('truck');
    assert.equal((await device.register({ thing_key: thingKey })).status, 200);
    const bulk = await device.event({
      events: [
        { thing_key: thingKey, timestamp: 1_700_000_000_000, data: { speed: 40 }, waypoint: [18.52, 73.85] },
        { thing_key: thingKey, timestamp: 1_700_000_001_000, data: { speed: 42 } },
        { thing_key: thingKey, timestamp: 1_700_000_002_000, waypoint: ['19.07', '72.87'] },
      ],
    });
    assert.equal(bulk.status, 200, bulk.text);
    assert.deepEqual((await readThing(thingKey)).coordinates, [19.07, 72.87]);
    assert.equal(await storedEventCount(ctx.api, thingKey), 3);
    const stored = await storedEvents(thingKey);
    assert.deepEqual(
      stored.map((e) => [e.timestamp, e.data]),
      [
        [1_700_000_000_000, '{"speed":40}'],
        [1_700_000_001_000, '{"speed":42}'],
        [1_700_000_002_000, '{}'],
      ],
    );
  });

  it('when a waypoint is off the globe or not a pair then it is dropped, and an event with nothing else is a 400', async () => {
    const thingKey = unique('truck');
    assert.equal((await device.register({ thing_key: thingKey })).status, 200);
    for (const waypoint of [[91, 10], [10, -181], [1, 2, 3], ['north', 'east'], 'here']) {
      const alone = await device.event({ thing_key: thingKey, waypoint });
      assert.equal(alone.status, 400, `${JSON.stringify(waypoint)}: ${alone.text}`);
      assert.equal(alone.body.errors[0].param, 'data');
      const withData = await device.event({ thing_key: thingKey, waypoint, data: { speed: 1 } });
      assert.equal(withData.status, 200, withData.text);
    }
    assert.equal((await readThing(thingKey)).coordinates, null);
    assert.equal(await storedEventCount(ctx.api, thingKey), 5);
  });

  it('when data is not an object then it is a 400 naming it, alone and in a bulk, and nothing is stored', async () => {
    const thingKey = unique('bad');
    assert.equal((await device.register({ thing_key: thingKey })).status, 200);
    for (const data of [[1, 2], 'warm', null]) {
      const alone = await device.event({ thing_key: thingKey, data });
      assert.equal(alone.status, 400, `${JSON.stringify(data)}: ${alone.text}`);
      assert.equal(alone.body.errors[0].param, 'data');
      const bulk = await device.event({
        events: [
          { thing_key: thingKey, data: { ok: 1 } },
          { thing_key: thingKey, data },
        ],
      });
      assert.equal(bulk.status, 400, bulk.text);
      assert.equal(bulk.body.errors[0].param, 'events.1.data');
    }
    assert.equal(await storedEventCount(ctx.api, thingKey), 0);
  });

  it('when a list of one event is refused then its parameters are named in the list, as in a list of two, and a user is answered 400 where a device is 422', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const user = (events: object[]) =>
      ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, { token, body: { events } });
    const refusedAs = async (answer: Promise<{ status: number; body: { errors: { param: string }[] } }>) => {
      const { status, body } = await answer;
      return [status, body.errors[0]?.param];
    };
    assert.deepEqual(await refusedAs(user([{ timestamp: 'x', data: { flow: 1 } }])), [400, 'events.0.timestamp']);
    assert.deepEqual(await refusedAs(user([{ timestamp: 1767400000 }])), [400, 'events.0.data']);
    assert.deepEqual(await refusedAs(user([{ data: { flow: 1 } }, { timestamp: 'x', data: {} }])), [
      400,
      'events.1.timestamp',
    ]);
    // A device's bulk of one is a list too; its single event is not.
    const listed = device.event({ events: [{ thing_key: thing.thing_key, data: 'warm' }] });
    assert.deepEqual(await refusedAs(listed), [400, 'events.0.data']);
    assert.deepEqual(await refusedAs(device.event({ thing_key: thing.thing_key, data: 'warm' })), [400, 'data']);
    // A time more than a day ahead: the devices' 422, the REST API's 400.
    const ahead = Date.now() + 3 * 86_400_000;
    assert.deepEqual(await refusedAs(user([{ timestamp: ahead, data: { flow: 1 } }])), [400, 'events.0.timestamp']);
    const fromDevice = device.event({ thing_key: thing.thing_key, timestamp: ahead, data: { flow: 1 } });
    assert.deepEqual(await refusedAs(fromDevice), [422, 'timestamp']);
    assert.equal(await storedEventCount(ctx.api, thing.thing_key), 0);
  });

  it('when a timestamp comes as decimal text then it is read as the number, in seconds or milliseconds', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: {
        events: [
          { timestamp: '1700000000', data: { n: 1 } },
          { timestamp: '1700000005123', data: { n: 2 } },
          { timestamp: '1.7000000001e12', data: { n: 3 } },
        ],
      },
    });
    assert.equal(sent.status, 200, sent.text);
    assert.deepEqual(
      (await storedEvents(thing.thing_key)).map((e) => [e.timestamp, e.data]),
      [
        [1_700_000_000_000, '{"n":1}'],
        [1_700_000_000_100, '{"n":3}'],
        [1_700_000_005_123, '{"n":2}'],
      ],
    );
    // Decimal text only (docs/api.md, "Requests"): no other notation, no spaces around it.
    for (const timestamp of ['-1700000000', 'yesterday', '0x10', ' 1700000005123 ', 'Infinity']) {
      const refused = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token,
        body: { events: [{ timestamp, data: { n: 3 } }] },
      });
      assert.equal(refused.status, 400, `${timestamp}: ${refused.text}`);
      assert.equal(refused.body.errors[0].param, 'events.0.timestamp');
    }
  });

  it('when a thing of the Default template sends a new boolean metric then the template learns it as boolean', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const name = unique('door').replaceAll('-', '_');
    const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { [name]: true, nested: { [name]: false } } }] },
    });
    assert.equal(sent.status, 200, sent.text);
    const template = await ctx.api.request(
      'GET',
      `/api/v3/thing_templates/${await defaultTemplateKey(ctx.api, token)}`,
      {
        token,
      },
    );
    const metrics = template.body.thing_template.metrics as { name: string; data_type: string }[];
    assert.equal(metrics.find((m) => m.name === name)?.data_type, 'boolean', template.text);
    assert.equal(metrics.find((m) => m.name === `nested.${name}`)?.data_type, 'boolean', template.text);
    const wrong = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { [name]: 'open' } }] },
    });
    // A value the template refuses: a user's 400 (a device's 422).
    assert.equal(wrong.status, 400, wrong.text);
    assert.equal(wrong.body.errors[0].param, `events.0.data.${name}`);
  });

  it('when a Default thing sends a value where the template has metrics inside it then it is stored, and no metric holding another is learnt', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const name = unique('motor').replaceAll('-', '_');
    const send = (data: object) =>
      ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, { token, body: { events: [{ data }] } });
    const metricNames = async () => {
      const template = await ctx.api.request(
        'GET',
        `/api/v3/thing_templates/${await defaultTemplateKey(ctx.api, token)}`,
        {
          token,
        },
      );
      return (template.body.thing_template.metrics as { name: string }[])
        .map((m) => m.name)
        .filter((n) => n.startsWith(name));
    };
    assert.equal((await send({ [name]: { speed: 1 } })).status, 200);
    assert.deepEqual(await metricNames(), [`${name}.speed`]);
    // A stray number where the metrics' object goes: stored as sent, and not made a metric, which
    // would have the template refuse every later event of the object's shape.
    const stray = await send({ [name]: 5 });
    assert.equal(stray.status, 200, stray.text);
    assert.deepEqual(await metricNames(), [`${name}.speed`]);
    const again = await send({ [name]: { speed: 2 } });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(
      (await storedEvents(thing.thing_key)).map((e) => JSON.parse(e.data)[name]),
      [{ speed: 1 }, 5, { speed: 2 }],
    );
    // Both shapes new in one bulk: the first is learnt, the other is not.
    const other = `${name}_b`;
    const bulk = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { [other]: 1 } }, { data: { [other]: { x: 1 } } }] },
    });
    assert.equal(bulk.status, 200, bulk.text);
    assert.deepEqual(
      (await metricNames()).filter((n) => n.startsWith(other)),
      [other],
    );
  });

  it('when a Default thing sends members no metric name can address then they are stored, and the template stays one its own update takes', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const name = unique('ok').replaceAll('-', '_');
    const odd = { '': 1, 'a.b': 2, ['k'.repeat(201)]: 3, deep: { ['d'.repeat(200)]: 4 } };
    const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { ...odd, [name]: 5 } }] },
    });
    assert.equal(sent.status, 200, sent.text);
    const templateKey = await defaultTemplateKey(ctx.api, token);
    const template = await ctx.api.request('GET', `/api/v3/thing_templates/${templateKey}`, { token });
    const metrics = template.body.thing_template.metrics as { name: string }[];
    assert.ok(
      metrics.some((m) => m.name === name),
      'an addressable member is learnt',
    );
    for (const m of metrics) {
      assert.ok(m.name.length >= 1 && m.name.length <= 200, `a metric name of ${m.name.length} characters`);
    }
    assert.equal(
      metrics.some((m) => m.name === 'a.b'),
      false,
      'a member named a.b is not the b of a',
    );
    const again = await ctx.api.request('PUT', `/api/v3/thing_templates/${templateKey}`, {
      token,
      body: { thing_template: { metrics: template.body.thing_template.metrics } },
    });
    assert.equal(again.status, 200, again.text);
    const stored = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token,
      query: { thing_key: thing.thing_key },
    });
    assert.equal(stored.status, 200, stored.text);
    assert.deepEqual(stored.body[thing.thing_key]?.event_data?.[0]?.data?.['a.b'], 2, stored.text.slice(0, 300));
  });

  it('when events come in the query string, as repeated keys of JSON text or one JSON array, then they are stored', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const post = (events: string | string[]) =>
      ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, { token, query: { events } });
    const repeated = await post([
      JSON.stringify({ timestamp: 1_700_000_000_000, data: { t: 1, u: 2 } }),
      JSON.stringify({ timestamp: 1_700_000_001_000, data: { t: 3 } }),
    ]);
    assert.equal(repeated.status, 200, repeated.text);
    const whole = await post(JSON.stringify([{ timestamp: 1_700_000_002_000, data: { t: 4, u: 5 } }]));
    assert.equal(whole.status, 200, whole.text);
    const one = await post(JSON.stringify({ timestamp: 1_700_000_003_000, data: { t: 6, u: 7 } }));
    assert.equal(one.status, 200, one.text);
    const broken = await post(['{"data": {"t": 1}', '{}']);
    assert.deepEqual([broken.status, broken.body.errors?.[0]?.param], [400, 'events.0'], broken.text);
    assert.equal(await storedEventCount(ctx.api, thing.thing_key), 4);
  });

  it('when a device bulk holds more than 10,000 events then it is a 400 and nothing is stored', async () => {
    const thingKey = unique('many');
    assert.equal((await device.register({ thing_key: thingKey })).status, 200);
    const events = Array.from({ length: 10_001 }, (_, n) => ({ thing_key: thingKey, data: { n } }));
    const refused = await device.event({ events });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.errors[0].param, 'events');
    assert.match(refused.body.errors[0].message, /at most 10000 events/);
    assert.equal(await storedEventCount(ctx.api, thingKey), 0);
  });
});
