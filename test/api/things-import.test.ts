import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, createThing, defaultTemplateKey, unique, userWithAbilities } from '../support/fixtures.ts';
import type { TestServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

const importCsv = (api: TestServer, token: string, csv: string, query: Record<string, string | boolean> = {}) =>
  api.request('POST', '/api/v3/things/import', {
    token,
    rawBody: csv,
    query,
    headers: { 'content-type': 'text/csv; charset=utf-8' },
  });

const getThing = (api: TestServer, token: string, key: string) =>
  api.request('GET', `/api/v3/things/${key}`, { token });

async function auditOf(api: TestServer, token: string, key: string) {
  const response = await api.request('GET', '/api/v3/audit_trails', {
    token,
    query: { entity_key: key, order: 'asc' },
  });
  return response.body.audit_trails as any[];
}

async function createTemplate(api: TestServer, token: string) {
  const response = await api.request('POST', '/api/v3/thing_templates', {
    token,
    body: { thing_template: { name: unique('template') } },
  });
  assert.equal(response.status, 200, response.text);
  return response.body.thing_template.thing_template_key as string;
}

describeOnStores('things import', (ctx) => {
  it('when a CSV names every Thing field then each row becomes a thing with one audit trail', async () => {
    const token = await ctx.api.adminToken();
    const template = await createTemplate(ctx.api, token);
    const [a, b, c] = [unique('csv-a'), unique('csv-b'), unique('csv-c')];
    const csv = [
      'thing_key,name,description,tags,thing_template_key,bi_directional,user_defined_properties.site,user_defined_properties.floor',
      `${a},Boiler A,"hall, east","boiler,hall-a",${template},true,Pune,3`,
      `${b},"Boiler ""B""",,,,false,Pune,`,
      '',
      `${c},Boiler C,,,,,,`,
    ].join('\r\n');
    const response = await importCsv(ctx.api, token, csv);
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, { created: 3, updated: 0, failed: [] });
    const first = (await getThing(ctx.api, token, a)).body.thing;
    assert.equal(first.name, 'Boiler A');
    assert.equal(first.description, 'hall, east');
    assert.deepEqual(first.tags_array, ['boiler', 'hall-a']);
    assert.equal(first.thing_template_key, template);
    assert.equal(first.bi_directional, true);
    assert.deepEqual(first.user_defined_properties, { site: 'Pune', floor: '3' });
    const second = (await getThing(ctx.api, token, b)).body.thing;
    assert.equal(second.name, 'Boiler "B"');
    assert.equal(second.thing_template_name, 'Default', 'an empty template cell is the Default template');
    assert.deepEqual(second.user_defined_properties, { site: 'Pune' }, 'an empty cell sets no property');
    const audit = await auditOf(ctx.api, token, a);
    assert.equal(audit.length, 1);
    assert.equal(audit[0].action_taken, 'create');
    assert.equal(audit[0].entity_type, 'Thing');
    assert.equal(audit[0].new_entity_contents.name, 'Boiler A');
    assert.equal((await auditOf(ctx.api, token, c)).length, 1);
  });

  it('when a property is named __proto__ or nothing then it is refused wherever properties are given, and nothing is kept', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    // JSON's own member, as a client sends it (an object literal would set the prototype instead).
    const named = (name: string) => JSON.parse(`{"${name}":"x","site":"north"}`);
    const refusals = [
      await ctx.api.request('POST', '/api/v3/things', {
        token,
        body: {
          thing: {
            name: 'p',
            thing_template_key: await defaultTemplateKey(ctx.api, token),
            user_defined_properties: named('__proto__'),
          },
        },
      }),
      await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}/set_user_defined_properties`, {
        token,
        body: { user_defined_properties: named('__proto__') },
      }),
      await ctx.api.request('PUT', `/api/v1/sensors/${thing.thing_key}/set_traits`, {
        token,
        body: { traits: named('__proto__') },
      }),
      await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}/set_user_defined_properties`, {
        token,
        body: { user_defined_properties: named('') },
      }),
    ];
    for (const refused of refusals) {
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.errors[0].param, /user_defined_properties|traits/);
    }
    assert.match(refusals[1]?.body.errors[0].message, /may not name a property __proto__/);
    assert.deepEqual((await getThing(ctx.api, token, thing.thing_key)).body.thing.user_defined_properties, {});
    for (const column of ['user_defined_properties.__proto__', 'user_defined_properties.']) {
      const key = unique('csv-proto');
      const imported = await importCsv(ctx.api, token, `thing_key,name,${column}\n${key},P,x\n`, { atomic: true });
      assert.equal(imported.status, 200, imported.text);
      assert.equal(imported.body.created, 0);
      assert.equal(imported.body.failed[0]?.errors[0]?.param, 'user_defined_properties', imported.text);
      assert.equal((await getThing(ctx.api, token, key)).status, 404, column);
    }
  });

  it('when upserts of one new key run at once then one creates it and the others update it, on either store', async () => {
    const token = await ctx.api.adminToken();
    const key = unique('race');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        ctx.api.request('POST', '/api/v3/things/import', {
          token,
          query: { mode: 'upsert' },
          body: { things: [{ thing_key: key, name: `Racer ${i}` }] },
        }),
      ),
    );
    for (const answer of answers) assert.equal(answer.status, 200, answer.text);
    assert.equal(
      answers.reduce((n, a) => n + a.body.created, 0),
      1,
    );
    assert.equal(
      answers.reduce((n, a) => n + a.body.updated, 0),
      5,
    );
    assert.equal((await getThing(ctx.api, token, key)).status, 200);
  });

  it('when rows fail then each is answered by its number with its errors, and the others are written', async () => {
    const token = await ctx.api.adminToken();
    const taken = await createThing(ctx.api, token, {});
    const [ok1, ok2, dup] = [unique('ok'), unique('ok'), unique('dup')];
    const response = await ctx.api.request('POST', '/api/v3/things/import', {
      token,
      body: {
        things: [
          { thing_key: ok1, name: 'fine' },
          { thing_key: dup, name: 'first of a key' },
          { thing_key: dup, name: 'second of a key' },
          { name: 'unknown template', thing_template_key: 'no-such-template' },
          { thing_key: taken.thing_key, name: 'exists already' },
          { thing_key: 'has spaces', name: '' },
          'not an object',
          { name: 'generated key', user_defined_properties: { a: 1 } },
          { thing_key: ok2, name: 'unknown field', colour: 'red' },
        ],
      },
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.created, 3);
    assert.equal(response.body.updated, 0);
    const failed = Object.fromEntries(response.body.failed.map((f: any) => [f.row, f.errors]));
    assert.deepEqual(Object.keys(failed).map(Number), [3, 4, 5, 6, 7, 9]);
    assert.deepEqual(failed[3], [{ code: 'conflict', param: 'thing_key', message: 'repeats row 2' }]);
    assert.equal(failed[4][0].code, 'not_found');
    assert.equal(failed[4][0].param, 'thing_template_key');
    assert.equal(failed[5][0].code, 'conflict');
    assert.match(failed[5][0].message, /already exists/);
    assert.deepEqual(failed[6].map((e: any) => e.param).sort(), ['name', 'thing_key']);
    assert.equal(failed[7][0].code, 'invalid');
    assert.deepEqual(failed[9], [{ code: 'unknown_field', param: 'colour', message: 'is not a known field' }]);
    assert.equal((await getThing(ctx.api, token, ok1)).status, 200);
    assert.equal((await getThing(ctx.api, token, ok2)).status, 404);
    assert.equal((await getThing(ctx.api, token, dup)).body.thing.name, 'first of a key');
    assert.equal((await getThing(ctx.api, token, taken.thing_key)).body.thing.name, taken.name);
  });

  it('when atomic is set and a row fails then nothing is written; dry_run writes nothing and counts', async () => {
    const token = await ctx.api.adminToken();
    const [a, b] = [unique('atomic'), unique('atomic')];
    const atomic = await importCsv(ctx.api, token, `thing_key,name\n${a},fine\n${b},\n`, { atomic: true });
    assert.equal(atomic.status, 200, atomic.text);
    assert.equal(atomic.body.created, 0);
    assert.deepEqual(
      atomic.body.failed.map((f: any) => [f.row, f.errors[0].param]),
      [[2, 'name']],
    );
    assert.equal((await getThing(ctx.api, token, a)).status, 404);
    const existing = await createThing(ctx.api, token, {});
    const dry = await ctx.api.request('POST', '/api/v3/things/import', {
      token,
      body: {
        dry_run: true,
        mode: 'upsert',
        things: [
          { thing_key: a, name: 'new' },
          { thing_key: existing.thing_key, name: 'renamed' },
        ],
      },
    });
    assert.deepEqual(dry.body, { created: 1, updated: 1, failed: [] });
    assert.equal((await getThing(ctx.api, token, a)).status, 404);
    assert.equal((await getThing(ctx.api, token, existing.thing_key)).body.thing.name, existing.name);
    assert.equal((await auditOf(ctx.api, token, existing.thing_key)).length, 1);
    const whole = await importCsv(ctx.api, token, `thing_key,name\n${a},fine\n${b},fine too\n`, { atomic: true });
    assert.deepEqual(whole.body, { created: 2, updated: 0, failed: [] });
  });

  it('when mode is upsert then existing things are updated as PUT updates them, keeping an unnamed template', async () => {
    const token = await ctx.api.adminToken();
    const template = await createTemplate(ctx.api, token);
    const existing = await createThing(ctx.api, token, {
      thing_template_key: template,
      description: 'kept',
      user_defined_properties: { old: 'x' },
    });
    const fresh = unique('upsert-new');
    const response = await importCsv(
      ctx.api,
      token,
      `thing_key,name,user_defined_properties.site\n${existing.thing_key},Renamed,Pune\n${fresh},New one,\n`,
      { mode: 'upsert' },
    );
    assert.deepEqual(response.body, { created: 1, updated: 1, failed: [] });
    const updated = (await getThing(ctx.api, token, existing.thing_key)).body.thing;
    assert.equal(updated.name, 'Renamed');
    assert.equal(updated.description, 'kept');
    assert.equal(updated.thing_template_key, template);
    assert.deepEqual(updated.user_defined_properties, { site: 'Pune' });
    const audit = await auditOf(ctx.api, token, existing.thing_key);
    assert.deepEqual(
      audit.map((a) => a.action_taken),
      ['create', 'update'],
    );
    assert.equal(audit[1].old_entity_contents.name, existing.name);
    assert.equal(audit[1].new_entity_contents.name, 'Renamed');
    const retemplated = await ctx.api.request('POST', '/api/v3/things/import', {
      token,
      body: {
        mode: 'upsert',
        things: [
          {
            thing_key: existing.thing_key,
            name: 'Renamed',
            thing_template_key: await defaultTemplateKey(ctx.api, token),
          },
        ],
      },
    });
    assert.deepEqual(retemplated.body, { created: 0, updated: 1, failed: [] });
    assert.equal((await getThing(ctx.api, token, existing.thing_key)).body.thing.thing_template_name, 'Default');
  });

  it("when a key names another organisation's thing then the row fails as a taken key, and nothing of it changes", async () => {
    const admin = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, admin);
    const theirs = await createThing(ctx.api, child.token, {});
    const response = await ctx.api.request('POST', '/api/v3/things/import', {
      token: admin,
      body: { mode: 'upsert', things: [{ thing_key: theirs.thing_key, name: 'stolen' }] },
    });
    assert.equal(response.body.updated, 0);
    assert.equal(response.body.failed[0].errors[0].code, 'conflict');
    assert.equal((await getThing(ctx.api, child.token, theirs.thing_key)).body.thing.name, theirs.name);
  });

  it('when the caller lacks a permission then the import is a 403', async () => {
    const admin = await ctx.api.adminToken();
    const reader = await userWithAbilities(ctx.api, admin, [11]);
    const creator = await userWithAbilities(ctx.api, admin, [11, 12]);
    const csv = `name\n${unique('perm')}\n`;
    assert.equal((await importCsv(ctx.api, reader.token, csv)).status, 403);
    const upsert = await importCsv(ctx.api, creator.token, csv, { mode: 'upsert' });
    assert.equal(upsert.status, 403);
    assert.match(upsert.body.message, /update thing/);
    assert.deepEqual((await importCsv(ctx.api, creator.token, csv)).body.created, 1);
    assert.equal((await importCsv(ctx.api, '', csv)).status, 401);
  });

  it('when the CSV is malformed then the answer is a 400 naming the line, and nothing is written', async () => {
    const token = await ctx.api.adminToken();
    const key = unique('badcsv');
    const cases: [string, RegExp][] = [
      [`thing_key,name\n${key},fine\n${unique('x')},"not closed\n`, /line 3/],
      [`thing_key,name\n${key},"bad"quote\n`, /line 2/],
      [`thing_key,name\n${key},fine,extra\n`, /line 2/],
      ['thing_key,colour\na,red\n', /unknown column "colour"/],
      ['name,name\na,b\n', /column "name" twice/],
    ];
    for (const [csv, message] of cases) {
      const response = await importCsv(ctx.api, token, csv);
      assert.equal(response.status, 400, csv);
      assert.equal(response.body.success, false);
      assert.equal(response.body.errors[0].param, 'body');
      assert.match(response.body.message, message);
    }
    assert.equal((await getThing(ctx.api, token, key)).status, 404);
  });

  it('when the request is too big or holds no rows then it is refused in the error shape', async () => {
    const token = await ctx.api.adminToken();
    const big = await importCsv(ctx.api, token, `name\n${'x'.repeat(11 * 1024 * 1024)}\n`);
    assert.equal(big.status, 413);
    assert.equal(big.body.success, false);
    assert.equal(big.body.errors[0].code, 'too_large');
    assert.match(big.body.message, /10 MiB \(10485760 bytes\)/);
    const many = await ctx.api.request('POST', '/api/v3/things/import', {
      token,
      body: { things: Array.from({ length: 20_001 }, () => ({})) },
    });
    assert.equal(many.status, 400);
    assert.equal(many.body.success, false);
    assert.equal(many.body.errors[0].code, 'invalid');
    assert.equal(many.body.errors[0].param, 'things');
    assert.match(many.body.message, /more than 20000 items/);
    const none = await ctx.api.request('POST', '/api/v3/things/import', { token, body: {} });
    assert.equal(none.status, 400);
    assert.equal(none.body.errors[0].param, 'things');
    const empty = await importCsv(ctx.api, token, 'thing_key,name\n');
    assert.deepEqual(empty.body, { created: 0, updated: 0, failed: [] });
  });

  it('when a CSV holds millions of rows then it is refused naming the limit, and other requests are answered', async () => {
    const token = await ctx.api.adminToken();
    // About 10 MB, under the body limit: 5.2 million rows.
    const csv = `name\n${'x\n'.repeat(5_200_000)}`;
    const [many, health] = await Promise.all([importCsv(ctx.api, token, csv), ctx.api.request('GET', '/healthz')]);
    assert.equal(many.status, 400, many.text.slice(0, 500));
    assert.equal(many.body.success, false);
    assert.deepEqual(
      many.body.errors.map((e: any) => [e.code, e.param]),
      [['invalid', 'things']],
    );
    assert.match(many.body.message, /holds more than 20000 rows; one request may hold at most 20000/);
    assert.equal(health.status, 200);
    const limit = `name\n${'x\n'.repeat(20_000)}`;
    const atLimit = await importCsv(ctx.api, token, limit, { dry_run: true });
    assert.deepEqual(atLimit.body, { created: 20_000, updated: 0, failed: [] });
    const pastLimit = await importCsv(ctx.api, token, `${limit}x\n`, { dry_run: true });
    assert.equal(pastLimit.status, 400);
    assert.match(pastLimit.body.message, /at most 20000/);
  });

  it('when bi_directional is written in any case in a CSV then it is read as true or false', async () => {
    const token = await ctx.api.adminToken();
    const [a, b, c, d] = [unique('bidi'), unique('bidi'), unique('bidi'), unique('bidi')];
    const csv = `thing_key,name,bi_directional\n${a},A,TRUE\n${b},B,False\n${c},C,tRuE\n${d},D,yes\n`;
    const response = await importCsv(ctx.api, token, csv);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.created, 3);
    assert.deepEqual(
      response.body.failed.map((f: any) => [f.row, f.errors[0].param]),
      [[4, 'bi_directional']],
    );
    assert.equal((await getThing(ctx.api, token, a)).body.thing.bi_directional, true);
    assert.equal((await getThing(ctx.api, token, b)).body.thing.bi_directional, false);
    assert.equal((await getThing(ctx.api, token, c)).body.thing.bi_directional, true);
  });
});
