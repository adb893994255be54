import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import {
  childOrganisation,
  createThing,
  defaultTemplateKey,
  postCreated,
  THING_FIELDS,
  unique,
  userWithAbilities,
} from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('things', (ctx) => {
  it('when a thing is created then it has exactly the documented Thing fields', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {
      tags: 'boiler, hall-a,boiler',
      coordinates: [18.52, '73.85'],
      bi_directional: true,
      user_defined_properties: { site: 'Pune', floor: 3, heated: true },
    });
    assert.deepEqual(Object.keys(thing).sort(), THING_FIELDS);
    assert.match(thing.thing_key, /^[0-9a-z]{10}$/);
    assert.deepEqual(thing.tags_array, ['boiler', 'hall-a']);
    assert.equal(thing.tags, 'boiler,hall-a');
    assert.deepEqual(thing.coordinates, [18.52, '73.85']);
    assert.equal(thing.bi_directional, true);
    assert.deepEqual(thing.user_defined_properties, { site: 'Pune', floor: '3', heated: 'true' });
    assert.equal(thing.state, null);
    assert.equal(thing.alive, false);
    assert.equal(thing.last_event, null);
    assert.equal(thing.last_beat, null);
    assert.equal(thing.thing_template_name, 'Default');
  });

  it('when a client chooses the thing key then it is kept, and a second use is a 409', async () => {
    const token = await ctx.api.adminToken();
    const key = unique('pump.7_A');
    const thing = await createThing(ctx.api, token, { thing_key: key });
    assert.equal(thing.thing_key, key);
    const again = await ctx.api.request('POST', '/api/v3/things', {
      token,
      body: { thing: { thing_key: key, name: 'x', thing_template_key: await defaultTemplateKey(ctx.api, token) } },
    });
    assert.equal(again.status, 409);
    const bad = await ctx.api.request('POST', '/api/v3/things', {
      token,
      body: {
        thing: {
          thing_key: 'no spaces allowed',
          name: 'x',
          thing_template_key: await defaultTemplateKey(ctx.api, token),
        },
      },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].param, 'thing.thing_key');
  });

  it('when user-defined properties are set then they merge, and null removes one; set_traits does the same', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, { user_defined_properties: { site: 'Pune', line: '1' } });
    const merged = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}/set_user_defined_properties`, {
      token,
      body: { user_defined_properties: { line: 2, shift: 'night', site: null } },
    });
    assert.equal(merged.status, 200, merged.text);
    assert.deepEqual(merged.body.thing.user_defined_properties, { line: '2', shift: 'night' });
    const traits = await ctx.api.request('PUT', `/api/v1/sensors/${thing.thing_key}/set_traits`, {
      token,
      body: { traits: { colour: 'red' } },
    });
    assert.equal(traits.status, 200, traits.text);
    assert.deepEqual(traits.body.thing.user_defined_properties, { line: '2', shift: 'night', colour: 'red' });
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: thing.thing_key, action_taken: 'update', order: 'asc' },
    });
    const updates = audit.body.audit_trails.filter((a: any) => a.action_taken === 'update');
    assert.equal(updates.length, 2);
    assert.deepEqual(updates[0].old_entity_contents.user_defined_properties, { site: 'Pune', line: '1' });
  });

  it('when a thing is updated and deleted then the change shows and the thing is gone', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, { description: 'old' });
    const updated = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { description: 'new', tags: ['a', 'b'] } },
    });
    assert.equal(updated.body.thing.description, 'new');
    assert.equal(updated.body.thing.tags, 'a,b');
    const keyChange = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { thing_key: 'x' } },
    });
    assert.equal(keyChange.status, 400, 'keys never change');
    assert.deepEqual((await ctx.api.request('DELETE', `/api/v3/things/${thing.thing_key}`, { token })).body, {});
    assert.equal((await ctx.api.request('GET', `/api/v3/things/${thing.thing_key}`, { token })).status, 404);
  });

  it('when coordinates and bi_directional are updated then they show, null clears the coordinates, and lists filter on bi_directional false', async () => {
    const token = await ctx.api.adminToken();
    const word = unique('twoway');
    const thing = await createThing(ctx.api, token, { name: `${word} a`, bi_directional: true });
    const other = await createThing(ctx.api, token, { name: `${word} b` });
    const moved = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { coordinates: [48.85, 2.35], bi_directional: false } },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.deepEqual(moved.body.thing.coordinates, [48.85, 2.35]);
    assert.equal(moved.body.thing.bi_directional, false);
    const cleared = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { coordinates: null } },
    });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.thing.coordinates, null);
    const oneWay = await ctx.api.request('GET', '/api/v3/things', {
      token,
      query: { search: word, bi_directional: false },
    });
    assert.deepEqual(
      oneWay.body.things.map((t: { thing_key: string }) => t.thing_key).sort(),
      [thing.thing_key, other.thing_key].sort(),
    );
    await ctx.api.request('PUT', `/api/v3/things/${other.thing_key}`, {
      token,
      body: { thing: { bi_directional: true } },
    });
    const stillOneWay = await ctx.api.request('GET', '/api/v3/things', {
      token,
      query: { search: word, bi_directional: false },
    });
    assert.deepEqual(
      stillOneWay.body.things.map((t: { thing_key: string }) => t.thing_key),
      [thing.thing_key],
    );
  });

  it('when things are listed with filters then only matching things come', async () => {
    const token = await ctx.api.adminToken();
    const word = unique('valve');
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('tt') } },
    });
    const templateKey = template.body.thing_template.thing_template_key;
    const a = await createThing(ctx.api, token, {
      name: `${word} A`,
      bi_directional: true,
      thing_template_key: templateKey,
    });
    const b = await createThing(ctx.api, token, { name: `${word} B`, tags: ['outdoor'] });
    const byTemplate = await ctx.api.request('GET', '/api/v3/things', {
      token,
      query: { thing_template_key: templateKey },
    });
    assert.deepEqual(
      byTemplate.body.things.map((t: any) => t.thing_key),
      [a.thing_key],
    );
    const bySearch = await ctx.api.request('GET', '/api/v3/things', {
      token,
      query: { search: word, order_by: 'name', order: 'asc' },
    });
    assert.deepEqual(
      bySearch.body.things.map((t: any) => t.thing_key),
      [a.thing_key, b.thing_key],
    );
    const byTag = await ctx.api.request('GET', '/api/v3/things', { token, query: { search: `${word} outdoor` } });
    assert.deepEqual(
      byTag.body.things.map((t: any) => t.thing_key),
      [b.thing_key],
    );
    // Keywords match the comma-joined tags as answered, never the stored JSON's quotes and brackets.
    const tagged = await createThing(ctx.api, token, { name: unique('Pump'), tags: [`${word}-hall`, 'North'] });
    const keysFound = async (search: string) => {
      const response = await ctx.api.request('GET', '/api/v3/things', { token, query: { search, per: 1000 } });
      assert.equal(response.status, 200, response.text);
      return response.body.things.map((t: any) => t.thing_key);
    };
    assert.deepEqual(await keysFound(`${word}-hall,north`), [tagged.thing_key]);
    assert.deepEqual(await keysFound(`${word}-hall,nor`), [tagged.thing_key]);
    assert.deepEqual(await keysFound(`${word} "`), []);
    assert.deepEqual(await keysFound(`${word} [`), []);
    assert.deepEqual(await keysFound(`${word} ","`), []);
    const biDirectional = await ctx.api.request('GET', '/api/v3/things', {
      token,
      query: { search: word, bi_directional: true },
    });
    assert.deepEqual(
      biDirectional.body.things.map((t: any) => t.thing_key),
      [a.thing_key],
    );
  });

  it('when a thing names an unknown or foreign template then it is a 400 not_found', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const foreignTemplate = await defaultTemplateKey(ctx.api, child.token);
    for (const key of ['nosuchtmpl', foreignTemplate]) {
      const response = await ctx.api.request('POST', '/api/v3/things', {
        token,
        body: { thing: { name: 'x', thing_template_key: key } },
      });
      assert.equal(response.status, 400);
      assert.deepEqual(
        [response.body.errors[0].code, response.body.errors[0].param],
        ['not_found', 'thing.thing_template_key'],
      );
    }
  });

  it('when another organisation asks for a thing then it is a 404, unless an OEM parent uses is_oem', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const childThing = await createThing(ctx.api, child.token, {});
    assert.equal((await ctx.api.request('GET', `/api/v3/things/${childThing.thing_key}`, { token })).status, 404);
    const viaOem = await ctx.api.request('GET', `/api/v3/things/${childThing.thing_key}`, {
      token,
      query: { is_oem: true },
    });
    assert.equal(viaOem.status, 200);
    const mine = await createThing(ctx.api, token, {});
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/things/${mine.thing_key}`, { token: child.token })).status,
      404,
    );
    assert.equal(
      (await ctx.api.request('DELETE', `/api/v3/things/${mine.thing_key}`, { token: child.token })).status,
      404,
    );
  });

  it('when a user lacks thing permissions then it is a 403', async () => {
    const token = await ctx.api.adminToken();
    const reader = await userWithAbilities(ctx.api, token, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: reader.token })).status, 200);
    const create = await ctx.api.request('POST', '/api/v3/things', {
      token: reader.token,
      body: { thing: { name: 'x', thing_template_key: 'y' } },
    });
    assert.equal(create.status, 403);
  });

  it('when a list asks for alive things, or things not alive, then it answers those alone, counted so, in a group too', async () => {
    const token = await ctx.api.adminToken();
    const created = await postCreated(ctx.api, token, '/api/v3/thing_templates', {
      thing_template: { name: unique('fast'), heartbeat_interval: 1 },
    });
    const templateKey = created.thing_template.thing_template_key as string;
    const heard = await createThing(ctx.api, token, { name: 'heard', thing_template_key: templateKey });
    const silent = await createThing(ctx.api, token, { name: 'silent', thing_template_key: templateKey });
    const fallen = await createThing(ctx.api, token, { name: 'fallen', thing_template_key: templateKey });
    const device = new Device(ctx.api.url, await createKeyPair(ctx.api, token));
    // Heard from once, then silent for more than twice its heartbeat interval.
    assert.equal((await device.heartbeat({ thing_key: fallen.thing_key })).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 2300));
    assert.equal((await device.event({ thing_key: heard.thing_key, data: { t: 1 } })).status, 200);
    const dynamic = await postCreated(ctx.api, token, '/api/v3/groups', {
      group: { name: unique('fast'), group_type: 2, thing_expression: `thing_template_key == '${templateKey}'` },
    });
    const groupKey = dynamic.group.group_key as string;
    const keys = (body: { things: { thing_key: string; alive: boolean }[] }, alive: boolean) => {
      for (const thing of body.things) assert.equal(thing.alive, alive, 'each thing listed says it');
      return body.things.map((t) => t.thing_key).sort();
    };
    for (const path of [`/api/v3/things?thing_template_key=${templateKey}&`, `/api/v3/groups/${groupKey}/things?`]) {
      const alive = await ctx.api.request('GET', `${path}alive=true`, { token });
      assert.equal(alive.status, 200, alive.text);
      assert.deepEqual(keys(alive.body, true), [heard.thing_key], path);
      assert.equal(alive.body.total_count, 1);
      const notAlive = await ctx.api.request('GET', `${path}alive=false`, { token });
      assert.deepEqual(keys(notAlive.body, false), [fallen.thing_key, silent.thing_key].sort(), path);
      assert.equal(notAlive.body.total_count, 2);
      const all = await ctx.api.request('GET', path, { token });
      assert.equal(all.body.total_count, 3, path);
      const bad = await ctx.api.request('GET', `${path}alive=maybe`, { token });
      assert.equal(bad.status, 400, path);
      assert.equal(bad.body.errors[0].param, 'alive');
    }
  });
});
