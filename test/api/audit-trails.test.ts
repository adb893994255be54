import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createRole, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('audit trails', (ctx) => {
  it('when a role is created, updated and deleted then each change has one audit trail with old and new contents', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    await ctx.api.request('PUT', `/api/v3/roles/${role.role_key}`, { token, body: { role: { abilities: [11, 21] } } });
    await ctx.api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token });
    const response = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: role.role_key, order: 'asc' },
    });
    assert.equal(response.status, 200);
    const [created, updated, deleted] = response.body.audit_trails;
    assert.equal(response.body.total_count, 3);
    assert.equal(created.action_taken, 'create');
    assert.equal(created.entity_type, 'Role');
    assert.equal(created.entity_name, role.name);
    assert.deepEqual(created.old_entity_contents, {});
    assert.deepEqual(created.new_entity_contents.abilities, [11]);
    assert.equal(created.user_name, 'admin@example.com');
    assert.equal(created.role_name, 'Account Admin');
    assert.equal(typeof created.timestamp, 'number');
    assert.deepEqual(updated.old_entity_contents.abilities, [11]);
    assert.deepEqual(updated.new_entity_contents.abilities, [11, 21]);
    assert.equal(deleted.action_taken, 'delete');
    assert.deepEqual(deleted.new_entity_contents, {});
    assert.equal(deleted.old_entity_contents.role_key, role.role_key);
    const one = await ctx.api.request('GET', `/api/v3/audit_trails/${updated.audit_trail_key}`, { token });
    assert.deepEqual(one.body.audit_trail, updated);
  });

  it('when a user is created or given a new password then no secret appears in its audit trail', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const password = 'a very secret password';
    const created = await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email: `${unique('s')}@example.com`, password, role_key: role.role_key } },
    });
    const key = created.body.user.user_key;
    await ctx.api.request('PUT', `/api/v3/users/${key}`, { token, body: { user: { password: `${password} 2` } } });
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
    assert.equal(audit.body.total_count, 2);
    assert.ok(!audit.text.includes(password));
    assert.ok(!audit.text.includes('password'));
    assert.ok(!audit.text.includes('scrypt'));
  });

  it('when filtering by entity_type and searching then only matching trails are listed', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Findable');
    await ctx.api.request('POST', '/api/v3/roles', { token, body: { role: { name, abilities: [] } } });
    const byType = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'User', per: 1000 },
    });
    assert.ok(byType.body.audit_trails.every((a: any) => a.entity_type === 'User'));
    const bySearch = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { search: `${name.toLowerCase()} CREATE` },
    });
    assert.equal(bySearch.body.total_count, 1);
    assert.equal(bySearch.body.audit_trails[0].entity_name, name);
    const anyScope = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { search: `${name} nothing-matches-this`, scope: 'any' },
    });
    assert.equal(anyScope.body.total_count, 1);
    const allScope = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { search: `${name} nothing-matches-this` },
    });
    assert.equal(allScope.body.total_count, 0);
  });

  it('when listing without per then 10 trails come, newest first', async () => {
    const token = await ctx.api.adminToken();
    for (let i = 0; i < 11; i++) await createRole(ctx.api, token, []);
    const response = await ctx.api.request('GET', '/api/v3/audit_trails', { token });
    assert.equal(response.body.audit_trails.length, 10);
    const times = response.body.audit_trails.map((a: any) => a.timestamp);
    assert.deepEqual(
      times,
      [...times].sort((a: number, b: number) => b - a),
    );
  });

  it('when timestamp_format is str then nested timestamps in the contents are text too', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, []);
    const response = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: role.role_key, timestamp_format: 'str', time_zone: 'UTC' },
    });
    const trail = response.body.audit_trails[0];
    assert.match(trail.timestamp, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
    assert.match(trail.new_entity_contents.created_at, /^\d{4}\/\d{2}\/\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('when audit trails are written to or read without permission then it is 404, 403 or 401', async () => {
    const token = await ctx.api.adminToken();
    assert.equal((await ctx.api.request('GET', '/api/v3/audit_trails/nosuchtrail', { token })).status, 404);
    assert.equal((await ctx.api.request('POST', '/api/v3/audit_trails', { token, body: {} })).status, 404);
    assert.equal((await ctx.api.request('GET', '/api/v3/audit_trails')).status, 401);
    const role = await createRole(ctx.api, token, [11]);
    const email = `${unique('noaudit')}@example.com`;
    await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email, password: 'password one', role_key: role.role_key } },
    });
    const userToken = await ctx.api.signIn(email, 'password one');
    assert.equal((await ctx.api.request('GET', '/api/v3/audit_trails', { token: userToken })).status, 403);
  });
});
