import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('groups', (ctx) => {
  async function createGroup(token: string, group: Record<string, unknown>, extra: object = {}) {
    const response = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('group'), ...group }, ...extra },
    });
    assert.equal(response.status, 200, response.text);
    return response.body.group;
  }

  async function memberKeys(token: string, groupKey: string, query: Record<string, string | number> = {}) {
    const response = await ctx.api.request('GET', `/api/v3/groups/${groupKey}/things`, {
      token,
      query: { per: 1000, ...query },
    });
    assert.equal(response.status, 200, response.text);
    return (response.body.things as any[]).map((t) => t.thing_key).sort();
  }

  it('when a static group is created then it lists exactly its things and has no expression', async () => {
    const token = await ctx.api.adminToken();
    const a = await createThing(ctx.api, token, {});
    const b = await createThing(ctx.api, token, {});
    await createThing(ctx.api, token, {});
    const group = await createGroup(token, {
      group_type: 1,
      thing_keys: [a.thing_key, b.thing_key, a.thing_key],
      tags: 'x, y',
    });
    assert.equal(group.group_type, 1);
    assert.equal(group.thing_expression, null);
    assert.equal(group.scope, 'all');
    assert.equal(group.tags, 'x,y');
    assert.deepEqual(await memberKeys(token, group.group_key), [a.thing_key, b.thing_key].sort());
    const viaThings = await ctx.api.request('GET', '/api/v3/things', {
      token,
      query: { group_key: group.group_key, per: 1000 },
    });
    assert.deepEqual(viaThings.body.things.map((t: any) => t.thing_key).sort(), [a.thing_key, b.thing_key].sort());
  });

  it('when a thing of a static group is deleted then it leaves the group', async () => {
    const token = await ctx.api.adminToken();
    const a = await createThing(ctx.api, token, {});
    const b = await createThing(ctx.api, token, {});
    const group = await createGroup(token, { group_type: 1, thing_keys: [a.thing_key, b.thing_key] });
    await ctx.api.request('DELETE', `/api/v3/things/${a.thing_key}`, { token });
    assert.deepEqual(await memberKeys(token, group.group_key), [b.thing_key]);
  });

  it('when a dynamic group is read then its expression is evaluated against the things as they are now', async () => {
    const token = await ctx.api.adminToken();
    const site = unique('Pune');
    const boiler = await createThing(ctx.api, token, { tags: ['boiler'], user_defined_properties: { site, floor: 3 } });
    await createThing(ctx.api, token, { tags: ['boiler'], user_defined_properties: { site: 'Delhi' } });
    const pump = await createThing(ctx.api, token, { tags: ['pump'], user_defined_properties: { site } });
    const group = await createGroup(token, {
      group_type: 2,
      scope: 'any',
      thing_expression: `tags contains 'boiler' and user_defined_properties.site == '${site}' and user_defined_properties.floor >= 2`,
    });
    assert.equal(group.group_type, 2);
    assert.equal(group.scope, 'any');
    assert.match(group.thing_expression, /tags contains/);
    assert.deepEqual(await memberKeys(token, group.group_key), [boiler.thing_key]);
    await ctx.api.request('PUT', `/api/v3/things/${pump.thing_key}`, { token, body: { thing: { tags: ['boiler'] } } });
    await ctx.api.request('PUT', `/api/v3/things/${pump.thing_key}/set_user_defined_properties`, {
      token,
      body: { user_defined_properties: { floor: '5' } },
    });
    assert.deepEqual(await memberKeys(token, group.group_key), [boiler.thing_key, pump.thing_key].sort());
  });

  it('when a dynamic group names the template then its things are the members', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Chillers');
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name } },
    });
    const chiller = await createThing(ctx.api, token, {
      thing_template_key: template.body.thing_template.thing_template_key,
    });
    await createThing(ctx.api, token, {});
    const group = await createGroup(token, { group_type: 2, thing_expression: `thing_template_name == '${name}'` });
    assert.deepEqual(await memberKeys(token, group.group_key), [chiller.thing_key]);
    const negated = await createGroup(token, {
      group_type: 2,
      thing_expression: `not (thing_template_name != '${name}')`,
    });
    assert.deepEqual(await memberKeys(token, negated.group_key), [chiller.thing_key]);
  });

  it('when a dynamic group matches many things then pages split them without repeats and total_count counts all', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('paged');
    const keys: string[] = [];
    for (let i = 0; i < 7; i++)
      keys.push((await createThing(ctx.api, token, { tags: [tag], name: `n${i}` })).thing_key);
    await createThing(ctx.api, token, { tags: ['other'] });
    const group = await createGroup(token, { group_type: 2, thing_expression: `tags contains '${tag}'` });
    const seen: string[] = [];
    for (let page = 1; page <= 4; page++) {
      const response = await ctx.api.request('GET', `/api/v3/groups/${group.group_key}/things`, {
        token,
        query: { per: 2, page, order_by: 'name', order: 'asc' },
      });
      assert.equal(response.body.total_count, 7);
      seen.push(...response.body.things.map((t: any) => t.thing_key));
    }
    assert.deepEqual(seen, keys);
  });

  it('when groups are listed then search, field_list and is_oem work as for roles', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('findme');
    const group = await createGroup(token, { group_type: 1, tags: [tag] });
    const found = await ctx.api.request('GET', '/api/v3/groups', {
      token,
      query: { search: tag, field_list: 'name,tags' },
    });
    assert.equal(found.body.total_count, 1);
    assert.deepEqual(Object.keys(found.body.groups[0]).sort(), ['group_key', 'name', 'tags']);
    assert.equal(found.body.groups[0].group_key, group.group_key);
    // Keywords match the comma-joined tags as answered, never the stored JSON's quotes and brackets.
    const tagged = await createGroup(token, { group_type: 1, tags: [`${tag}-b`, 'West'] });
    const keysFound = async (search: string) => {
      const response = await ctx.api.request('GET', '/api/v3/groups', { token, query: { search, per: 1000 } });
      assert.equal(response.status, 200, response.text);
      return response.body.groups.map((g: any) => g.group_key);
    };
    assert.deepEqual(await keysFound(`${tag}-b,we`), [tagged.group_key]);
    assert.deepEqual(await keysFound(`${tag} "`), []);
    assert.deepEqual(await keysFound(`${tag} [`), []);
    const child = await childOrganisation(ctx.api, token);
    const childGroup = await createGroup(child.token, { group_type: 1 });
    assert.equal((await ctx.api.request('GET', `/api/v3/groups/${childGroup.group_key}`, { token })).status, 404);
    const oem = await ctx.api.request('GET', '/api/v3/groups', { token, query: { is_oem: true, per: 1000 } });
    assert.ok(oem.body.groups.some((g: any) => g.group_key === childGroup.group_key));
    const own = await ctx.api.request('GET', '/api/v3/groups', { token: child.token, query: { per: 1000 } });
    assert.ok(!own.body.groups.some((g: any) => g.group_key === group.group_key));
  });

  it('when a group is updated then members, type and expression change together', async () => {
    const token = await ctx.api.adminToken();
    const a = await createThing(ctx.api, token, {});
    const b = await createThing(ctx.api, token, { tags: ['moved'] });
    const group = await createGroup(token, { group_type: 1, thing_keys: [a.thing_key] });
    const members = await ctx.api.request('PUT', `/api/v3/groups/${group.group_key}`, {
      token,
      body: { group: { thing_keys: [b.thing_key] } },
    });
    assert.equal(members.status, 200, members.text);
    assert.deepEqual(await memberKeys(token, group.group_key), [b.thing_key]);
    const dynamic = await ctx.api.request('PUT', `/api/v3/groups/${group.group_key}`, {
      token,
      body: { group: { group_type: 2, thing_expression: `thing_key == '${a.thing_key}'` } },
    });
    assert.equal(dynamic.body.group.group_type, 2);
    assert.deepEqual(await memberKeys(token, group.group_key), [a.thing_key]);
    const back = await ctx.api.request('PUT', `/api/v3/groups/${group.group_key}`, {
      token,
      body: { group: { group_type: 1 } },
    });
    assert.equal(back.body.group.thing_expression, null);
    assert.deepEqual(await memberKeys(token, group.group_key), []);
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: group.group_key },
    });
    assert.equal(audit.body.total_count, 4);
    assert.equal((await ctx.api.request('DELETE', `/api/v3/groups/${group.group_key}`, { token })).status, 200);
    assert.equal((await ctx.api.request('GET', `/api/v3/groups/${group.group_key}/things`, { token })).status, 404);
  });

  it('when a group body is wrong then it is a 400 naming the problem and nothing is written', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const foreign = await createThing(ctx.api, child.token, {});
    const cases: [object, string, string, RegExp?][] = [
      [{ group_type: 1 }, 'required', 'group.name'],
      [{ name: 'g' }, 'required', 'group.group_type'],
      [{ name: 'g', group_type: 3 }, 'invalid', 'group.group_type'],
      [{ name: 'g', group_type: 'static' }, 'invalid', 'group.group_type'],
      [{ name: 'g', group_type: 2 }, 'required', 'group.thing_expression'],
      [
        { name: 'g', group_type: 2, thing_expression: "name == 'a' and" },
        'invalid',
        'group.thing_expression',
        /position 15/,
      ],
      [
        { name: 'g', group_type: 2, thing_expression: "colour == 'red'" },
        'invalid',
        'group.thing_expression',
        /colour/,
      ],
      [{ name: 'g', group_type: 1, thing_expression: "name == 'a'" }, 'invalid', 'group.thing_expression'],
      [{ name: 'g', group_type: 2, thing_expression: "name == 'a'", thing_keys: [] }, 'invalid', 'group.thing_keys'],
      [{ name: 'g', group_type: 1, thing_keys: ['nosuchthing'] }, 'not_found', 'group.thing_keys', /nosuchthing/],
      [{ name: 'g', group_type: 1, thing_keys: [foreign.thing_key] }, 'not_found', 'group.thing_keys'],
      [{ name: 'g', group_type: 1, members: [] }, 'unknown_field', 'group.members'],
      [{ name: 'g', group_type: 1, scope: 'some' }, 'invalid', 'group.scope'],
    ];
    const before = await ctx.api.request('GET', '/api/v3/groups', { token });
    for (const [group, code, param, message] of cases) {
      const response = await ctx.api.request('POST', '/api/v3/groups', { token, body: { group } });
      assert.equal(response.status, 400, `${JSON.stringify(group)}: ${response.text}`);
      const item = response.body.errors.find((e: any) => e.code === code && e.param === param);
      assert.ok(item, `${JSON.stringify(group)}: ${response.text}`);
      if (message) assert.match(item.message, message);
    }
    const after = await ctx.api.request('GET', '/api/v3/groups', { token });
    assert.equal(after.body.total_count, before.body.total_count);
  });

  it('when a user lacks the group permission then it is a 403', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/groups', { token: user.token })).status, 403);
    const writer = await userWithAbilities(ctx.api, token, [51]);
    assert.equal(
      (
        await ctx.api.request('POST', '/api/v3/groups', {
          token: writer.token,
          body: { group: { name: 'g', group_type: 1 } },
        })
      ).status,
      403,
    );
  });
  it('when a group is read by its key then it is answered as created, and an update of its name, description, scope and tags keeps its members and expression', async () => {
    const token = await ctx.api.adminToken();
    const a = await createThing(ctx.api, token, {});
    const b = await createThing(ctx.api, token, {});
    const group = await createGroup(token, {
      group_type: 1,
      thing_keys: [a.thing_key, b.thing_key],
      description: 'one',
    });
    const read = await ctx.api.request('GET', `/api/v3/groups/${group.group_key}`, { token });
    assert.equal(read.status, 200, read.text);
    assert.deepEqual(read.body.group, group);
    const name = unique('renamed');
    const updated = await ctx.api.request('PUT', `/api/v3/groups/${group.group_key}`, {
      token,
      body: { group: { name, description: 'two', scope: 'any', tags: ['east', 'west'] } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.group.name, name);
    assert.equal(updated.body.group.description, 'two');
    assert.equal(updated.body.group.scope, 'any');
    assert.equal(updated.body.group.tags, 'east,west');
    assert.equal(updated.body.group.group_type, 1);
    assert.deepEqual(
      (await ctx.api.request('GET', `/api/v3/groups/${group.group_key}`, { token })).body.group,
      updated.body.group,
    );
    assert.deepEqual(await memberKeys(token, group.group_key), [a.thing_key, b.thing_key].sort());

    const dynamic = await createGroup(token, { group_type: 2, thing_expression: `thing_key == '${a.thing_key}'` });
    const renamed = await ctx.api.request('PUT', `/api/v3/groups/${dynamic.group_key}`, {
      token,
      body: { group: { name: unique('renamed') } },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.group.thing_expression, `thing_key == '${a.thing_key}'`);
    assert.deepEqual(await memberKeys(token, dynamic.group_key), [a.thing_key]);
  });

  it('when a dynamic group’s expression can be narrowed in SQL only in part, or not at all, then its members are still exactly the things it matches', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('narrow');
    const numericTag = String(100_000 + Math.floor(Math.random() * 800_000));
    // Property names of this test's own, so things of other tests match none of the expressions.
    const p = unique('p').replaceAll('-', '_');
    const q = unique('q').replaceAll('-', '_');
    const one = await createThing(ctx.api, token, { tags: [tag], user_defined_properties: { [p]: 'a', [q]: '3' } });
    const two = await createThing(ctx.api, token, {
      tags: [tag, numericTag],
      user_defined_properties: { [p]: 'b', [q]: '12' },
    });
    const three = await createThing(ctx.api, token, { user_defined_properties: { [p]: ' 3.0 ' } });
    const cases: [string, string[]][] = [
      [`'${tag}' in tags`, [one.thing_key, two.thing_key]],
      // A number equals numeric text: no text comparison in SQL may decide it.
      [`user_defined_properties.${p} == 3`, [three.thing_key]],
      [`user_defined_properties.${p} == 'a' or user_defined_properties.${q} > 10`, [one.thing_key, two.thing_key]],
      [`user_defined_properties.${q} > 1 and user_defined_properties.${q} < 10`, [one.thing_key]],
      [`'${one.name}' == name`, [one.thing_key]],
      [`tags contains ${numericTag}`, [two.thing_key]],
      [`user_defined_properties.${p}.x == 'a'`, []],
    ];
    for (const [thing_expression, expected] of cases) {
      const group = await createGroup(token, { group_type: 2, thing_expression });
      assert.deepEqual(await memberKeys(token, group.group_key), expected.sort(), thing_expression);
    }
  });

  it('when a dynamic group’s things are listed by template, bi_directional or keyword then only those members are answered', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('listed');
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('Valves') } },
    });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key as string;
    const word = unique('beta');
    const m1 = await createThing(ctx.api, token, {
      tags: [tag],
      thing_template_key: templateKey,
      bi_directional: true,
    });
    const m2 = await createThing(ctx.api, token, { tags: [tag], name: `${word} valve` });
    const m3 = await createThing(ctx.api, token, { tags: [tag], thing_template_key: templateKey });
    await createThing(ctx.api, token, { thing_template_key: templateKey, bi_directional: true });
    const group = await createGroup(token, { group_type: 2, thing_expression: `tags contains '${tag}'` });
    assert.deepEqual(await memberKeys(token, group.group_key), [m1.thing_key, m2.thing_key, m3.thing_key].sort());
    assert.deepEqual(
      await memberKeys(token, group.group_key, { thing_template_key: templateKey }),
      [m1.thing_key, m3.thing_key].sort(),
    );
    assert.deepEqual(await memberKeys(token, group.group_key, { bi_directional: 'true' }), [m1.thing_key]);
    assert.deepEqual(await memberKeys(token, group.group_key, { search: word }), [m2.thing_key]);
    assert.deepEqual(await memberKeys(token, group.group_key, { search: `${tag} "` }), []);
  });

  it('when a dynamic group’s candidates run past one batch then every member is found once, in order, both ways', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('bulk');
    const model = await createThing(ctx.api, token, { tags: [tag], user_defined_properties: { n: '0' } });
    const db = ctx.api.server.store.db;
    const { thing_id: _id, ...row } = await db
      .selectFrom('things')
      .selectAll()
      .where('thing_key', '=', model.thing_key)
      .executeTakeFirstOrThrow();
    // Many things at once, straight into the store: 1,100 candidates, two batches of the scan.
    const prefix = randomBytes(4).toString('hex');
    const made = Array.from({ length: 1100 }, (_, i) => ({
      ...row,
      thing_key: `${prefix}k${String(i).padStart(4, '0')}`,
      // Names repeat, so the keyset goes on from within a run of equal names.
      name: `bulk${String((i * 7) % 50).padStart(2, '0')}`,
      user_defined_properties: JSON.stringify({ n: String(i) }),
      created_at: Number(row.created_at) + i,
    }));
    for (let i = 0; i < made.length; i += 100)
      await db
        .insertInto('things')
        .values(made.slice(i, i + 100))
        .execute();
    const group = await createGroup(token, {
      group_type: 2,
      thing_expression: `tags contains '${tag}' and user_defined_properties.n >= 100`,
    });
    const members = made.filter((_, i) => i >= 100);
    const byName = (x: { name: string; thing_key: string }, y: { name: string; thing_key: string }) =>
      x.name === y.name ? (x.thing_key < y.thing_key ? -1 : 1) : x.name < y.name ? -1 : 1;
    const ascending = [...members].sort(byName).map((t) => t.thing_key);
    for (const [order, expected] of [
      ['asc', ascending],
      ['desc', [...ascending].reverse()],
    ] as const) {
      const seen: string[] = [];
      for (let page = 1; page <= 4; page++) {
        const response = await ctx.api.request('GET', `/api/v3/groups/${group.group_key}/things`, {
          token,
          query: { per: 300, page, order_by: 'name', order },
        });
        assert.equal(response.status, 200, response.text);
        assert.equal(response.body.total_count, 1000);
        seen.push(...response.body.things.map((t: { thing_key: string }) => t.thing_key));
      }
      assert.deepEqual(seen, expected, order);
    }
  });

  it('when the member counts of several groups are asked at once then each is the total its things list answers, and other organisations’ groups are a 404', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('counted');
    const a = await createThing(ctx.api, token, { tags: [tag] });
    await createThing(ctx.api, token, { tags: [tag] });
    await createThing(ctx.api, token, {});
    const byTag = await createGroup(token, { group_type: 2, thing_expression: `tags contains '${tag}'` });
    const one = await createGroup(token, { group_type: 1, thing_keys: [a.thing_key] });
    const none = await createGroup(token, { group_type: 1 });
    const keys = [byTag.group_key, one.group_key, none.group_key];
    const counted = await ctx.api.request('GET', '/api/v3/group_member_counts', {
      token,
      query: { group_keys: keys.join(',') },
    });
    assert.equal(counted.status, 200, counted.text);
    assert.deepEqual(counted.body, {
      member_counts: { [byTag.group_key]: 2, [one.group_key]: 1, [none.group_key]: 0 },
    });
    for (const key of keys) {
      const listed = await ctx.api.request('GET', `/api/v3/groups/${key}/things`, { token });
      assert.equal(listed.body.total_count, counted.body.member_counts[key]);
    }

    const child = await childOrganisation(ctx.api, token);
    const theirs = await ctx.api.request('GET', '/api/v3/group_member_counts', {
      token: child.token,
      query: { group_keys: byTag.group_key },
    });
    assert.equal(theirs.status, 404, theirs.text);
    const reader = await userWithAbilities(ctx.api, token, [11]);
    const refused = await ctx.api.request('GET', '/api/v3/group_member_counts', {
      token: reader.token,
      query: { group_keys: byTag.group_key },
    });
    assert.equal(refused.status, 403, refused.text);
    for (const groupKeys of ['', ',', Array.from({ length: 101 }, (_, i) => `g${i}`).join(',')]) {
      const wrong = await ctx.api.request('GET', '/api/v3/group_member_counts', {
        token,
        query: { group_keys: groupKeys },
      });
      assert.equal(wrong.status, 400, `${groupKeys}: ${wrong.text}`);
      assert.ok(
        wrong.body.errors.some((e: { param?: string }) => e.param === 'group_keys'),
        wrong.text,
      );
    }
  });
});
