import assert from 'node:assert/strict';
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
});
