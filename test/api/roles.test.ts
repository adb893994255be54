import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  assertTokenRequired,
  childOrganisation,
  createRole,
  createThing,
  unique,
  userWithAbilities,
} from '../support/fixtures.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('roles', (ctx) => {
  it('when a role is created then permissions are derived from its abilities and no timestamps are shown', async () => {
    const token = await ctx.api.adminToken();
    const response = await ctx.api.request('POST', '/api/v3/roles', {
      token,
      body: { role: { name: unique('Operators'), abilities: [11, 35, 995] } },
    });
    assert.equal(response.status, 200, response.text);
    const role = response.body.role;
    assert.match(role.role_key, /^[0-9a-z]{10}$/);
    assert.deepEqual(role.abilities, [11, 35, 995]);
    assert.equal(role.account_admin, false);
    assert.deepEqual(role.permissions, [
      { class: 'thing', operation: 'read', seqno: 1 },
      { class: 'rule', operation: 'all', seqno: 5 },
      { class: 'all', operation: 'all', seqno: 5 },
    ]);
    assert.equal('created_at' in role, false);
    assert.equal('updated_at' in role, false);

    const fetched = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, { token });
    assert.equal(fetched.status, 200);
    assert.equal(typeof fetched.body.role.created_at, 'number');
    assert.equal(fetched.body.role.name, role.name);
  });

  it('when a role is updated then the change shows and the answer has no timestamps', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const response = await ctx.api.request('PUT', `/api/v3/roles/${role.role_key}`, {
      token,
      body: { role: { abilities: [11, 12] } },
    });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body.role.abilities, [11, 12]);
    assert.equal(response.body.role.name, role.name);
    assert.equal('updated_at' in response.body.role, false);
    const fetched = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, { token });
    assert.deepEqual(fetched.body.role.abilities, [11, 12]);
  });

  it('when a role is deleted then it is gone and the answer is {}', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const deleted = await ctx.api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, {});
    const fetched = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, { token });
    assert.equal(fetched.status, 404);
    assert.equal(fetched.body.errors[0].code, 'not_found');
  });

  it('when roles are listed then the built-in roles are there with the documented shape', async () => {
    const token = await ctx.api.adminToken();
    const response = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 1000 } });
    assert.equal(response.status, 200);
    assert.equal(response.body.page, 1);
    assert.equal(response.body.total_count, response.body.roles.length);
    const admin = response.body.roles.find((r: any) => r.name === 'Account Admin');
    assert.equal(admin.account_admin, true);
    assert.deepEqual(admin.abilities, [995]);
    const agent = response.body.roles.find((r: any) => r.name === 'Agent');
    assert.deepEqual(agent.abilities, [11, 12, 13, 92, 122]);
    assert.equal(agent.account_admin, false);
  });

  it('when paging through roles sorted by name then every role appears exactly once', async () => {
    const token = await ctx.api.adminToken();
    for (let i = 0; i < 5; i++) await createRole(ctx.api, token, [11]);
    const all = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 1000 } });
    const seen: string[] = [];
    for (let page = 1; page <= Math.ceil(all.body.total_count / 2) + 1; page++) {
      const response = await ctx.api.request('GET', '/api/v3/roles', {
        token,
        query: { per: 2, page, order_by: 'name', order: 'asc' },
      });
      assert.equal(response.body.total_count, all.body.total_count);
      seen.push(...response.body.roles.map((r: any) => r.name));
    }
    assert.equal(seen.length, all.body.total_count);
    assert.deepEqual(seen, [...seen].sort());
    assert.equal(new Set(seen).size, seen.length);
  });

  it('when a page past the end is asked then the list is empty with the right total_count', async () => {
    const token = await ctx.api.adminToken();
    const response = await ctx.api.request('GET', '/api/v3/roles', { token, query: { page: 999 } });
    assert.equal(response.status, 200);
    assert.deepEqual(response.body.roles, []);
    assert.ok(response.body.total_count >= 2);
  });

  it('when parameters come in a GET body as strings then they are coerced and page is echoed as sent', async () => {
    const token = await ctx.api.adminToken();
    const response = await ctx.api.request('GET', '/api/v3/roles', { token, body: { page: '1', per: '1' } });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.page, '1');
    assert.equal(response.body.roles.length, 1);
  });

  it('when a JSON boolean is sent for a number then it is refused, and numbers still become booleans', async () => {
    const token = await ctx.api.adminToken();
    const listed = await ctx.api.request('GET', '/api/v3/roles', { token, body: { per: true } });
    assert.equal(listed.status, 400, listed.text);
    assert.equal(listed.body.errors[0].param, 'per');
    const org = await childOrganisation(ctx.api, token);
    const kept = await ctx.api.request('PUT', `/api/v3/organisations/${org.organisationKey}`, {
      token: org.token,
      body: { organisation: { retention_days: true } },
    });
    assert.equal(kept.status, 400, kept.text);
    assert.equal(kept.body.errors[0].param, 'organisation.retention_days');
    const read = await ctx.api.request('GET', `/api/v3/organisations/${org.organisationKey}`, { token: org.token });
    assert.equal(read.body.organisation.retention_days, null);
    const thing = await createThing(ctx.api, token, { name: unique('flag'), bi_directional: 1 });
    assert.equal(thing.bi_directional, true, 'a number is still read as a boolean');
  });

  it('when search has several keywords then scope all needs every one and scope any one of them', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('zeta');
    await createRole(ctx.api, token, [11], {});
    await ctx.api.request('POST', '/api/v3/roles', {
      token,
      body: { role: { name: `${tag} Alpha`, abilities: [11] } },
    });
    await ctx.api.request('POST', '/api/v3/roles', { token, body: { role: { name: `${tag} Beta`, abilities: [11] } } });
    const all = await ctx.api.request('GET', '/api/v3/roles', {
      token,
      query: { search: `${tag.toUpperCase()} alpha` },
    });
    assert.deepEqual(
      all.body.roles.map((r: any) => r.name),
      [`${tag} Alpha`],
    );
    const any = await ctx.api.request('GET', '/api/v3/roles', {
      token,
      query: { search: `${tag}-nomatch alpha beta`, scope: 'any', order_by: 'name', order: 'asc' },
    });
    assert.deepEqual(
      any.body.roles.map((r: any) => r.name),
      [`${tag} Alpha`, `${tag} Beta`],
    );
  });

  it('when field_list or the deprecated fields is given then only those fields and the key are returned', async () => {
    const token = await ctx.api.adminToken();
    const viaList = await ctx.api.request('GET', '/api/v3/roles', {
      token,
      query: { field_list: ['name', 'abilities'] },
    });
    assert.equal(viaList.status, 200, viaList.text);
    for (const role of viaList.body.roles)
      assert.deepEqual(Object.keys(role).sort(), ['abilities', 'name', 'role_key']);
    const viaBody = await ctx.api.request('GET', '/api/v3/roles', { token, body: { field_list: ['name'] } });
    for (const role of viaBody.body.roles) assert.deepEqual(Object.keys(role).sort(), ['name', 'role_key']);
    const deprecated = await ctx.api.request('GET', '/api/v3/roles', {
      token,
      query: { fields: 'name,account_admin' },
    });
    for (const role of deprecated.body.roles)
      assert.deepEqual(Object.keys(role).sort(), ['account_admin', 'name', 'role_key']);
  });

  it('when timestamp_format is str then timestamps are text in the requested zone', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const asInt = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, { token });
    const asStr = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, {
      token,
      query: { timestamp_format: 'str', time_zone: 'Mumbai' },
    });
    assert.match(asStr.body.role.created_at, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
    const utc = new Date(asInt.body.role.created_at * 1000 + 5.5 * 3600 * 1000).toISOString();
    assert.equal(asStr.body.role.created_at, `${utc.slice(0, 10).replace(/-/g, '/')} ${utc.slice(11, 19)}`);
    const synonym = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, {
      token,
      query: { time_format: 'str', time_zone: 'Asia/Kolkata' },
    });
    assert.equal(synonym.body.role.created_at, asStr.body.role.created_at);
  });

  it('when pretty is true then the answer is indented with two spaces', async () => {
    const token = await ctx.api.adminToken();
    const pretty = await ctx.api.request('GET', '/api/v3/roles', { token, query: { pretty: true, per: 1 } });
    assert.ok(pretty.text.startsWith('{\n  "total_count"'), pretty.text.slice(0, 40));
    const compact = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 1 } });
    assert.ok(!compact.text.includes('\n'));
  });

  describeBadInput();

  function describeBadInput() {
    const cases: [string, string, string, object, number, string, string | undefined][] = [
      ['a missing name', 'POST', '/api/v3/roles', { role: { abilities: [11] } }, 400, 'required', 'role.name'],
      ['a missing role object', 'POST', '/api/v3/roles', {}, 400, 'required', 'role'],
      [
        'an unknown field',
        'POST',
        '/api/v3/roles',
        { role: { name: 'x', abilities: [], colour: 'red' } },
        400,
        'unknown_field',
        'role.colour',
      ],
      [
        'a wrong type',
        'POST',
        '/api/v3/roles',
        { role: { name: 'x', abilities: 'all' } },
        400,
        'invalid',
        'role.abilities',
      ],
      [
        'an ability outside the table',
        'POST',
        '/api/v3/roles',
        { role: { name: 'x', abilities: [11, 16] } },
        400,
        'invalid',
        'role.abilities',
      ],
      [
        'is_oem without child_organisation_key',
        'POST',
        '/api/v3/roles',
        { is_oem: true, role: { name: 'x', abilities: [11] } },
        400,
        'required',
        'child_organisation_key',
      ],
      ['per above 1000', 'GET', '/api/v3/roles', { per: 1001 }, 400, 'invalid', 'per'],
      ['per of 0', 'GET', '/api/v3/roles', { per: 0 }, 400, 'invalid', 'per'],
      ['page of 0', 'GET', '/api/v3/roles', { page: 0 }, 400, 'invalid', 'page'],
      ['a non-numeric per', 'GET', '/api/v3/roles', { per: 'ten' }, 400, 'invalid', 'per'],
      ['an unknown order_by', 'GET', '/api/v3/roles', { order_by: 'password' }, 400, 'invalid', 'order_by'],
      ['an unknown order', 'GET', '/api/v3/roles', { order: 'sideways' }, 400, 'invalid', 'order'],
      [
        'an unknown field_list name',
        'GET',
        '/api/v3/roles',
        { field_list: ['name', 'secret'] },
        400,
        'invalid',
        'field_list.1',
      ],
      ['an unknown fields name', 'GET', '/api/v3/roles', { fields: 'name,secret' }, 400, 'invalid', 'fields'],
      ['an unknown time zone', 'GET', '/api/v3/roles', { time_zone: 'Mars/Olympus' }, 400, 'invalid', 'time_zone'],
      [
        'an unknown timestamp_format',
        'GET',
        '/api/v3/roles',
        { timestamp_format: 'iso' },
        400,
        'invalid',
        'timestamp_format',
      ],
      ['an unknown role key', 'GET', '/api/v3/roles/nosuchrole', {}, 404, 'not_found', undefined],
      [
        'an update of an unknown key',
        'PUT',
        '/api/v3/roles/nosuchrole',
        { role: { name: 'y' } },
        404,
        'not_found',
        undefined,
      ],
    ];
    for (const [what, method, path, body, status, code, param] of cases) {
      it(`when a request carries ${what} then it is a ${status} naming the problem`, async () => {
        const token = await ctx.api.adminToken();
        const before = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { per: 1 } });
        const response = await ctx.api.request(method, path, { token, body });
        assert.equal(response.status, status, response.text);
        assert.equal(response.body.success, false);
        assert.equal(typeof response.body.message, 'string');
        const item = response.body.errors.find((e: any) => e.code === code);
        assert.ok(item, `expected an error item with code ${code}: ${response.text}`);
        if (param) assert.equal(item.param, param);
        for (const e of response.body.errors) assert.equal(typeof e.code, 'string');
        const afterwards = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { per: 1 } });
        assert.equal(afterwards.body.total_count, before.body.total_count, 'a refused request wrote nothing');
      });
    }
  }

  it('when a second role takes an existing name then it is a 409 and nothing is written', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const before = await ctx.api.request('GET', '/api/v3/roles', { token });
    const response = await ctx.api.request('POST', '/api/v3/roles', {
      token,
      body: { role: { name: role.name, abilities: [] } },
    });
    assert.equal(response.status, 409);
    assert.equal(response.body.errors[0].code, 'conflict');
    const afterwards = await ctx.api.request('GET', '/api/v3/roles', { token });
    assert.equal(afterwards.body.total_count, before.body.total_count);
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Role', search: role.name },
    });
    assert.equal(audit.body.total_count, 1, 'only the first create is audited');
  });

  it('when a built-in role is changed or deleted then it is a 403', async () => {
    const token = await ctx.api.adminToken();
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token, query: { search: 'Agent', per: 1000 } });
    const agent = roles.body.roles.find((r: any) => r.name === 'Agent');
    const changed = await ctx.api.request('PUT', `/api/v3/roles/${agent.role_key}`, {
      token,
      body: { role: { name: 'Spy' } },
    });
    assert.equal(changed.status, 403);
    const deleted = await ctx.api.request('DELETE', `/api/v3/roles/${agent.role_key}`, { token });
    assert.equal(deleted.status, 403);
    assert.equal(deleted.body.errors[0].code, 'forbidden');
  });

  it('when a role is still held by a user then deleting it is a 409', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [11]);
    const response = await ctx.api.request('DELETE', `/api/v3/roles/${user.role.role_key}`, { token });
    assert.equal(response.status, 409);
    assert.equal(response.body.errors[0].code, 'conflict');
  });

  it('when a user lacks a role permission then reads and writes of roles are 403', async () => {
    const token = await ctx.api.adminToken();
    const reader = await userWithAbilities(ctx.api, token, [61]);
    const list = await ctx.api.request('GET', '/api/v3/roles', { token: reader.token });
    assert.equal(list.status, 200);
    const create = await ctx.api.request('POST', '/api/v3/roles', {
      token: reader.token,
      body: { role: { name: 'n', abilities: [] } },
    });
    assert.equal(create.status, 403);
    assert.equal(create.body.errors[0].code, 'forbidden');
    const nobody = await userWithAbilities(ctx.api, token, [11]);
    const denied = await ctx.api.request('GET', '/api/v3/roles', { token: nobody.token });
    assert.equal(denied.status, 403);
    const updater = await userWithAbilities(ctx.api, token, [63, 12]);
    const role = await createRole(ctx.api, token, [11]);
    const update = await ctx.api.request('PUT', `/api/v3/roles/${role.role_key}`, {
      token: updater.token,
      body: { role: { abilities: [12] } },
    });
    assert.equal(update.status, 200, update.text);
    const remove = await ctx.api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token: updater.token });
    assert.equal(remove.status, 403);
  });

  it('when a user who may change roles or users would hand out permissions beyond their own then it is a 403', async () => {
    const token = await ctx.api.adminToken();
    const roleKeys = (await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 100 } })).body.roles;
    const admin = roleKeys.find((r: { name: string }) => r.name === 'Account Admin').role_key;
    // A role changer raising a role (its own included) past what it holds.
    const changer = await userWithAbilities(ctx.api, token, [61, 62, 63, 11]);
    for (const [method, path, abilities] of [
      ['POST', '/api/v3/roles', [11, 995]],
      ['PUT', `/api/v3/roles/${changer.role.role_key}`, [61, 62, 63, 11, 995]],
      ['PUT', `/api/v3/roles/${changer.role.role_key}`, [61, 62, 63, 11, 14]],
    ] as const) {
      const raised = await ctx.api.request(method, path, {
        token: changer.token,
        body: { role: { name: unique('raised'), abilities } },
      });
      assert.equal(raised.status, 403, `${method} ${path} ${abilities}: ${raised.text}`);
      assert.equal(raised.body.errors[0].param, 'role.abilities');
    }
    const within = await ctx.api.request('POST', '/api/v3/roles', {
      token: changer.token,
      body: { role: { name: unique('within'), abilities: [11, 61] } },
    });
    assert.equal(within.status, 200, within.text);
    // A user maker making an account admin, or a user of a role wider than its own.
    const maker = await userWithAbilities(ctx.api, token, [72, 73, 11]);
    const wide = await createRole(ctx.api, token, [11, 12]);
    for (const roleKey of [admin, wide.role_key]) {
      const made = await ctx.api.request('POST', '/api/v3/users', {
        token: maker.token,
        body: {
          user: { email: `${unique('esc')}@example.com`, password: 'a long enough password', role_key: roleKey },
        },
      });
      assert.equal(made.status, 403, made.text);
      assert.equal(made.body.errors[0].param, 'user.role_key');
    }
    const self = await ctx.api.request('PUT', `/api/v3/users/${maker.userKey}`, {
      token: maker.token,
      body: { user: { role_key: admin } },
    });
    assert.equal(self.status, 403, self.text);
    const narrow = await createRole(ctx.api, token, [11]);
    const fine = await ctx.api.request('POST', '/api/v3/users', {
      token: maker.token,
      body: {
        user: { email: `${unique('ok')}@example.com`, password: 'a long enough password', role_key: narrow.role_key },
      },
    });
    assert.equal(fine.status, 200, fine.text);
    // A key pair maker giving devices a role wider than its own.
    const pairs = await userWithAbilities(ctx.api, token, [132, 11]);
    const pair = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token: pairs.token,
      body: { key_pair: { name: unique('esc'), role_key: wide.role_key } },
    });
    assert.equal(pair.status, 403, pair.text);
    assert.equal(pair.body.errors[0].param, 'key_pair.role_key');
    const narrowPair = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token: pairs.token,
      body: { key_pair: { name: unique('ok'), role_key: narrow.role_key } },
    });
    assert.equal(narrowPair.status, 200, narrowPair.text);
  });

  it('when roles change through another server on the same store then the next list here shows each change', async () => {
    // Lists are served from memory while the organisation's role revision is unchanged (route.ts).
    const token = await ctx.api.adminToken();
    const other = await startServer(ctx.store, { storeSettings: ctx.api.storeSettings });
    try {
      const names = async (query: Record<string, unknown> = {}) => {
        const response = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 1000, ...query } });
        assert.equal(response.status, 200, response.text);
        return (response.body.roles as { name: string; role_key: string }[]).map((r) => r.name);
      };
      const before = await names();
      assert.deepEqual(await names(), before);

      const created = await other.request('POST', '/api/v3/roles', {
        token,
        body: { role: { name: unique('Elsewhere'), abilities: [11] } },
      });
      assert.equal(created.status, 200, created.text);
      const role = created.body.role;
      assert.deepEqual((await names()).sort(), [...before, role.name].sort());

      const renamed = unique('Renamed');
      const updated = await other.request('PUT', `/api/v3/roles/${role.role_key}`, {
        token,
        body: { role: { name: renamed } },
      });
      assert.equal(updated.status, 200, updated.text);
      const afterUpdate = await names();
      assert.ok(afterUpdate.includes(renamed) && !afterUpdate.includes(role.name), afterUpdate.join(', '));

      const listed = await ctx.api.request('GET', '/api/v3/roles', {
        token,
        query: { per: 1000, field_list: 'name', order_by: 'name', order: 'asc' },
      });
      assert.deepEqual(Object.keys(listed.body.roles[0]).sort(), ['name', 'role_key']);
      assert.deepEqual(
        listed.body.roles.map((r: { name: string }) => r.name),
        [...afterUpdate].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      );

      const deleted = await other.request('DELETE', `/api/v3/roles/${role.role_key}`, { token });
      assert.equal(deleted.status, 200, deleted.text);
      assert.deepEqual((await names()).sort(), [...before].sort());
    } finally {
      await other.close();
    }
  });

  it('when there is no token or a bad one then every role endpoint answers 401', async () => {
    await assertTokenRequired(ctx.api, [
      ['GET', '/api/v3/roles'],
      ['GET', '/api/v3/roles/abc'],
      ['POST', '/api/v3/roles'],
      ['PUT', '/api/v3/roles/abc'],
      ['DELETE', '/api/v3/roles/abc'],
    ]);
  });
});
