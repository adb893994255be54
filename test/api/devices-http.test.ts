import assert from 'node:assert/strict';
import { it } from 'node:test';
import { NewThings } from '../../src/devices/new-things.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('device HTTP interface', (ctx) => {
  async function device(body: object = {}) {
    return new Device(ctx.api.url, await createKeyPair(ctx.api, await ctx.api.adminToken(), body));
  }

  async function storedEvents(thingKey: string) {
    const db = ctx.api.server.store.db;
    return db
      .selectFrom('events')
      .innerJoin('things', 'things.thing_id', 'events.thing_id')
      .select(['events.timestamp', 'events.data', 'events.waypoint'])
      .where('things.thing_key', '=', thingKey)
      .orderBy('events.timestamp')
      .orderBy('events.event_id')
      .execute();
  }

  it('when a device registers a new thing then it is created in the Default template, and a second register updates it', async () => {
    const d = await device();
    const key = unique('dev');
    const first = await d.register({
      thing_key: key,
      name: 'Compressor',
      description: 'hall A',
      bi_directional: 1,
      tags: '',
      type: '',
    });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, {});
    const token = await ctx.api.adminToken();
    const thing = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    assert.equal(thing.name, 'Compressor');
    assert.equal(thing.thing_template_name, 'Default');
    assert.equal(thing.bi_directional, true);
    const again = await d.register({ device_key: key, name: 'Compressor 2', bi_directional: 'false' });
    assert.equal(again.status, 200, again.text);
    const updated = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    assert.equal(updated.name, 'Compressor 2');
    assert.equal(updated.bi_directional, false);
    // An unset flag sent as null leaves the thing as it is.
    const unset = await d.register({ device_key: key, name: 'Compressor 2', bi_directional: null });
    assert.equal(unset.status, 200, unset.text);
    assert.equal((await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing.bi_directional, false);
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
    assert.equal(audit.body.total_count, 2);
    assert.match(audit.body.audit_trails[0].user_name, /^key pair /);
  });

  it('when a device registers its thing again as it is then nothing is written: no audit record, updated_at kept', async () => {
    const d = await device();
    const key = unique('again');
    const register = { thing_key: key, name: 'Pump', description: 'hall B', bi_directional: true };
    assert.equal((await d.register(register)).status, 200);
    const token = await ctx.api.adminToken();
    const before = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    await new Promise((resolve) => setTimeout(resolve, 20));
    // As every device does at each start, and with `bi_directional` as 1 rather than true.
    assert.equal((await d.register(register)).status, 200);
    assert.equal((await d.register({ ...register, bi_directional: 1 })).status, 200);
    assert.equal((await d.register({ thing_key: key })).status, 200);
    const after = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    assert.equal(after.updated_at, before.updated_at);
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
    assert.equal(audit.body.total_count, 1, 'the creation only');
    // A register that changes something is still written.
    assert.equal((await d.register({ ...register, description: 'hall C' })).status, 200);
    const changed = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    assert.equal(changed.description, 'hall C');
    const audited = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
    assert.equal(audited.body.total_count, 2);
  });

  it('when a device registers a new thing several times at once then every register is answered 200 and the thing is made once', async () => {
    const d = await device();
    const key = unique('race');
    const answers = await Promise.all(Array.from({ length: 5 }, () => d.register({ thing_key: key })));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, 200, 200, 200],
      answers.map((answer) => answer.text).join('\n'),
    );
    const made = await ctx.api.server.store.db
      .selectFrom('things')
      .select('thing_id')
      .where('thing_key', '=', key)
      .execute();
    assert.equal(made.length, 1);
  });

  it('when many devices register new things at once then each thing is made with its own audit record', async () => {
    const devices = [await device(), await device()];
    const keys = Array.from({ length: 40 }, () => unique('storm'));
    const answers = await Promise.all(
      keys.map((key, i) => (devices[i % 2] as Device).register({ thing_key: key, name: `Machine ${i}` })),
    );
    assert.ok(
      answers.every((answer) => answer.status === 200),
      answers.map((answer) => answer.text).join('\n'),
    );
    const token = await ctx.api.adminToken();
    for (const [i, key] of keys.entries()) {
      const thing = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
      assert.equal(thing.name, `Machine ${i}`);
      const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
      assert.equal(audit.body.total_count, 1, key);
      assert.match(audit.body.audit_trails[0].user_name, /^key pair /);
    }
  });

  it('when one of the new things made together is taken meanwhile then the others are made, and it is refused as taken', async () => {
    const token = await ctx.api.adminToken();
    const taken = unique('taken');
    const made = await createThing(ctx.api, token, { thing_key: taken });
    const { organisation_key: organisationKey, thing_template_key: template } = await ctx.api.server.store.db
      .selectFrom('things')
      .select(['organisation_key', 'thing_template_key'])
      .where('thing_key', '=', made.thing_key)
      .executeTakeFirstOrThrow();
    const newThings = new NewThings(ctx.api.server.store);
    const actor = { userName: 'key pair storm', roleName: 'Admin' };
    const keys = [unique('fresh'), taken, unique('fresh')];
    const results = await Promise.allSettled(
      keys.map((key) =>
        newThings.create(actor, organisationKey, { thing_key: key, name: key, thing_template_key: template }),
      ),
    );
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason.message), /already exists/);
    for (const key of [keys[0], keys[2]]) {
      assert.equal((await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).status, 200);
    }
  });

  it('when a device sends an event then it is stored at millisecond precision and becomes the thing last_event', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key });
    // Text that array literals and JSON both escape: quotes, backslashes, braces, commas, non-ASCII.
    const note = 'a "quoted", back\\slash {x} [y] NULL caf\u00e9 \u{1f600}';
    const response = await d.event({
      thing_key: key,
      timestamp: 1_700_000_000_123,
      data: { temperature: 71.5, machine: { status: 'run' }, note },
    });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, {});
    const rows = await storedEvents(key);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.timestamp, 1_700_000_000_123);
    assert.deepEqual(JSON.parse(rows[0]?.data as string), { temperature: 71.5, machine: { status: 'run' }, note });
    const token = await ctx.api.adminToken();
    const thing = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    assert.deepEqual(thing.last_event, {
      timestamp: 1_700_000_000,
      data: { temperature: 71.5, machine: { status: 'run' }, note },
    });
    assert.equal(thing.alive, true);
    const template = await ctx.api.request('GET', `/api/v3/thing_templates/${thing.thing_template_key}`, { token });
    const names = template.body.thing_template.metrics.map((m: any) => `${m.name}:${m.data_type}`);
    assert.ok(names.includes('temperature:number') && names.includes('machine.status:string'), names.join());
  });

  it('when timestamps come in seconds, are missing, or are late then they are read as docs/devices.md says', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key });
    const before = Date.now();
    assert.equal((await d.event({ thing_key: key, timestamp: 1_700_000_000, data: { v: 1 } })).status, 200);
    assert.equal((await d.event({ thing_key: key, data: { v: 2 } })).status, 200);
    assert.equal((await d.event({ thing_key: key, timestamp: 1_600_000_000_000, data: { v: 3 } })).status, 200);
    const rows = await storedEvents(key);
    const byValue = new Map(rows.map((r) => [JSON.parse(r.data).v, r.timestamp]));
    assert.equal(byValue.get(1), 1_700_000_000_000, 'seconds are multiplied');
    assert.ok((byValue.get(2) as number) >= before, 'a missing timestamp is the receipt time');
    const token = await ctx.api.adminToken();
    const thing = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
    assert.deepEqual(thing.last_event.data, { v: 2 }, 'a late event does not replace the newest one');
  });

  it('when a device sends a bulk then every event is stored, and a bulk with one bad event stores nothing', async () => {
    const d = await device();
    const a = unique('dev');
    const b = unique('dev');
    await d.register({ thing_key: a });
    await d.register({ thing_key: b });
    const ok = await d.event({
      timestamp: 1_700_000_000_000,
      events: [
        { thing_key: a, data: { v: 1 } },
        { thing_key: b, timestamp: 1_700_000_001_000, data: { v: 2 }, waypoint: [18.5, 73.8] },
      ],
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await storedEvents(a))[0]?.timestamp, 1_700_000_000_000, 'the bulk timestamp is the default');
    assert.equal((await storedEvents(b)).length, 1);
    const token = await ctx.api.adminToken();
    assert.deepEqual(
      (await ctx.api.request('GET', `/api/v3/things/${b}`, { token })).body.thing.coordinates,
      [18.5, 73.8],
    );
    const bad = await d.event({
      events: [
        { thing_key: a, data: { v: 3 } },
        { thing_key: 'nosuchthing-xyz', data: { v: 4 } },
      ],
    });
    assert.equal(bad.status, 404);
    assert.equal(typeof bad.body.errors[0].code, 'string');
    assert.equal(typeof bad.body.errors[0].message, 'string');
    const notData = await d.event({ events: [{ thing_key: a, data: { v: 5 } }, { thing_key: a }] });
    assert.equal(notData.status, 400);
    assert.equal(notData.body.errors[0].param, 'events.1.data');
    assert.equal((await storedEvents(a)).length, 1, 'nothing of the refused bulks was stored');
  });

  it('when an event bulk is one byte over 10 MiB then it is a 413 with an SDK error body and nothing is stored; at 10 MiB it is stored', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key });
    const limit = 10 * 1024 * 1024;
    // 1,000 events of about 10 KiB each, the first one padded so the body is exactly `size` bytes.
    const bulkOfSize = (size: number) => {
      const events = Array.from({ length: 1000 }, (_, i) => ({
        thing_key: key,
        data: { n: i, note: 'x'.repeat(10_000) },
      }));
      const base = JSON.stringify({ events }).length;
      (events[0] as { data: { note: string } }).data.note += 'x'.repeat(size - base);
      const text = JSON.stringify({ events });
      assert.equal(Buffer.byteLength(text), size);
      return text;
    };
    const over = await d.event({}, { raw: bulkOfSize(limit + 1) });
    assert.equal(over.status, 413, over.text);
    assert.equal(over.body.errors[0].code, 'too_large');
    assert.equal(over.body.message, 'body is larger than the 10 MiB (10485760 bytes) this endpoint accepts');
    assert.equal((await storedEvents(key)).length, 0, 'nothing of the refused bulk was stored');
    const atLimit = await d.event({}, { raw: bulkOfSize(limit) });
    assert.equal(atLimit.status, 200, atLimit.text.slice(0, 500));
    assert.equal((await storedEvents(key)).length, 1000);
  });

  it('when a thing, its template or the template metrics change between events then the next events follow the change', async () => {
    const d = await device();
    const token = await ctx.api.adminToken();
    const template = async (dataType: string) => {
      const created = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: unique('tpl'), metrics: [{ name: 'v', data_type: dataType }] } },
      });
      assert.equal(created.status, 200, created.text);
      return created.body.thing_template.thing_template_key as string;
    };
    const first = await template('number');
    const { thing_key: key } = await createThing(ctx.api, token, { thing_template_key: first });
    assert.equal((await d.event({ thing_key: key, data: { v: 1 } })).status, 200);

    const retyped = await ctx.api.request('PUT', `/api/v3/thing_templates/${first}`, {
      token,
      body: { thing_template: { metrics: [{ name: 'v', data_type: 'string' }] } },
    });
    assert.equal(retyped.status, 200, retyped.text);
    assert.equal((await d.event({ thing_key: key, data: { v: 2 } })).status, 422, 'the edited metric type counts');
    assert.equal((await d.event({ thing_key: key, data: { v: 'two' } })).status, 200);

    const moved = await ctx.api.request('PUT', `/api/v3/things/${key}`, {
      token,
      body: { thing: { thing_template_key: await template('number') } },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.equal((await d.event({ thing_key: key, data: { v: 'three' } })).status, 422, 'the new template counts');
    assert.equal((await d.event({ thing_key: key, data: { v: 3 } })).status, 200);

    assert.equal((await ctx.api.request('DELETE', `/api/v3/things/${key}`, { token })).status, 200);
    assert.equal((await d.event({ thing_key: key, data: { v: 4 } })).status, 404, 'a deleted thing takes no events');
    assert.equal((await d.register({ thing_key: key })).status, 200);
    assert.equal((await d.event({ thing_key: key, data: { v: 5 } })).status, 200);
    assert.deepEqual(
      (await storedEvents(key)).map((e) => JSON.parse(e.data)),
      [{ v: 5 }],
      'the thing made again under the same key has only its own event',
    );
  });

  it('when a metric has the wrong type for its template, or the event is far in the future, then it is a 422', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key });
    await d.event({ thing_key: key, data: { pressure: 2.5 } });
    const wrongType = await d.event({ thing_key: key, data: { pressure: 'high' } });
    assert.equal(wrongType.status, 422, wrongType.text);
    assert.equal(wrongType.body.errors[0].param, 'data.pressure');
    const future = await d.event({
      thing_key: key,
      timestamp: Date.now() + 3 * 24 * 3600 * 1000,
      data: { pressure: 1 },
    });
    assert.equal(future.status, 422);
    assert.equal((await storedEvents(key)).length, 1);
  });

  it('when a register names a new thing with a key the REST API refuses then it is a 400 and no thing is made', async () => {
    const d = await device();
    const db = ctx.api.server.store.db;
    for (const key of [
      `a/${unique('k')}`,
      `x+${unique('k')}`,
      `h#${unique('k')}`,
      `sp ${unique('k')}`,
      `\u00fc${unique('k')}`,
    ]) {
      const refused = await d.register({ thing_key: key });
      assert.equal(refused.status, 400, `${key}: ${refused.text}`);
      assert.equal(refused.body.errors[0].param, 'thing_key');
      const made = await db.selectFrom('things').select('thing_id').where('thing_key', '=', key).execute();
      assert.equal(made.length, 0, `${key} was not made`);
    }
    const fine = unique('ok.key_1-');
    assert.equal((await d.register({ thing_key: fine })).status, 200);
  });

  it('when a metric value is a number beyond the range of a double then it is a 400 and nothing is stored', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key });
    for (const raw of [
      `{"thing_key":"${key}","data":{"temp":1e999}}`,
      `{"thing_key":"${key}","data":{"nested":{"v":-1e999}}}`,
      `{"events":[{"thing_key":"${key}","data":{"temp":1}},{"thing_key":"${key}","data":{"temp":2e400}}]}`,
    ]) {
      const refused = await d.event({}, { raw });
      assert.equal(refused.status, 400, `${raw}: ${refused.text}`);
      assert.equal(refused.body.errors[0].code, 'invalid');
      assert.match(refused.body.errors[0].param, /data\.(temp|nested\.v)$/);
    }
    assert.equal((await storedEvents(key)).length, 0);
    assert.equal((await d.event({}, { raw: `{"thing_key":"${key}","data":{"temp":1.7e308}}` })).status, 200);
    assert.equal((await storedEvents(key)).length, 1);
  });

  it('when the signature is wrong, the access key unknown or missing then it is a 401 and nothing is stored', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key });
    const wrong = await d.event({ thing_key: key, data: { v: 1 } }, { signature: 'ab'.repeat(32) });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.errors[0].code, 'unauthorized');
    const tampered = new Device(ctx.api.url, { ...d.keyPair, secret_key: 'x'.repeat(40) });
    assert.equal((await tampered.event({ thing_key: key, data: { v: 1 } })).status, 401);
    const unknown = new Device(ctx.api.url, { ...d.keyPair, access_key: 'y'.repeat(40) });
    assert.equal((await unknown.event({ thing_key: key, data: { v: 1 } })).status, 401);
    assert.equal((await storedEvents(key)).length, 0);
  });

  it('when the body has no or a wrong Content-Type, or is LZF-compressed, then the signature over its text still counts', async () => {
    const d = await device();
    const key = unique('dev');
    await d.register({ thing_key: key }, { contentType: null });
    assert.equal(
      (await d.event({ thing_key: key, data: { v: 1 } }, { contentType: 'text/plain; charset=ISO-8859-1' })).status,
      200,
    );
    assert.equal(
      (await d.event({ thing_key: key, data: { v: 2 } }, { contentType: 'application/x-www-form-urlencoded' })).status,
      200,
    );
    const big = { thing_key: key, data: { v: 3, note: 'x'.repeat(5000) } };
    const compressed = await d.event(big, { lzf: true, contentType: 'application/octet-stream' });
    assert.equal(compressed.status, 200, compressed.text);
    assert.equal((await storedEvents(key)).length, 3);
    const garbage = await d.post('/api/v3/things/event.json', null, {
      raw: 'x',
      lzf: false,
      contentType: 'application/octet-stream',
    });
    assert.equal(garbage.status, 400);
  });

  it('when the key pair role lacks a permission then it is a 403, and an unknown thing is a 404', async () => {
    const token = await ctx.api.adminToken();
    const roles = await ctx.api.request('POST', '/api/v3/roles', {
      token,
      body: { role: { name: unique('readonly'), abilities: [11] } },
    });
    const d = await device({ role_key: roles.body.role.role_key });
    const thing = await createThing(ctx.api, token, {});
    const event = await d.event({ thing_key: thing.thing_key, data: { v: 1 } });
    assert.equal(event.status, 403);
    assert.equal(event.body.errors[0].code, 'forbidden');
    assert.equal((await d.register({ thing_key: unique('new') })).status, 403);
    const agent = await device();
    assert.equal((await agent.event({ thing_key: 'nosuchthing', data: { v: 1 } })).status, 404);
    assert.equal((await agent.heartbeat({ thing_key: 'nosuchthing' })).status, 404);
  });

  it('when a device sends heartbeats then last_beat is set and the thing is alive', async () => {
    const d = await device();
    const a = unique('dev');
    const b = unique('dev');
    await d.register({ thing_key: a });
    await d.register({ thing_key: b });
    assert.equal((await d.heartbeat({ thing_key: a })).status, 200);
    const bulk = await d.heartbeat({ events: [{ thing_key: b, timestamp: Date.now(), type: 'THING_HEARTBEAT' }] });
    assert.equal(bulk.status, 200, bulk.text);
    const token = await ctx.api.adminToken();
    for (const key of [a, b]) {
      const thing = (await ctx.api.request('GET', `/api/v3/things/${key}`, { token })).body.thing;
      assert.equal(typeof thing.last_beat, 'number');
      assert.equal(thing.alive, true);
      assert.equal(thing.last_event, null);
    }
  });

  it('when another organisation key pair names a thing then it is a 404', async () => {
    const token = await ctx.api.adminToken();
    const mine = await createThing(ctx.api, token, {});
    const childAdmin = await (await import('../support/fixtures.ts')).childOrganisation(ctx.api, token);
    const foreign = new Device(ctx.api.url, await createKeyPair(ctx.api, childAdmin.token));
    assert.equal((await foreign.event({ thing_key: mine.thing_key, data: { v: 1 } })).status, 404);
  });

  it('when a user posts events with data permission then they are stored; without it the answer is 403', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const response = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: {
        events: [
          { timestamp: 1_700_000_000_000, data: { v: 1 } },
          { timestamp: 1_700_000_001, data: { v: 2 } },
        ],
      },
    });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(
      (await storedEvents(thing.thing_key)).map((r) => r.timestamp),
      [1_700_000_000_000, 1_700_000_001_000],
    );
    const reader = await userWithAbilities(ctx.api, token, [11]);
    const denied = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token: reader.token,
      body: { events: [{ data: { v: 3 } }] },
    });
    assert.equal(denied.status, 403);
  });
});
