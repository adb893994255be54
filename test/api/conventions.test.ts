import assert from 'node:assert/strict';
import { it } from 'node:test';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('request conventions', (ctx) => {
  it('when the store is reachable then /healthz answers ok without a token', async () => {
    const response = await ctx.api.request('GET', '/healthz');
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { status: 'ok' });
  });

  it('when the OpenAPI document is fetched then it describes the endpoints and their sortable fields', async () => {
    const response = await ctx.api.request('GET', '/openapi.json');
    assert.equal(response.status, 200);
    assert.equal(response.body.openapi, '3.1.0');
    for (const path of [
      '/api/v3/roles',
      '/api/v3/roles/{role_key}',
      '/api/v3/audit_trails',
      '/api_sign_in',
      '/api/v3/users',
    ]) {
      assert.ok(response.body.paths[path], `${path} is documented`);
    }
    const orderBy = response.body.paths['/api/v3/roles'].get.parameters.find((p: any) => p.name === 'order_by');
    assert.deepEqual(orderBy.schema.enum, ['created_at', 'updated_at', 'name', 'role_key']);
    const viewer = await ctx.api.request('GET', '/docs/');
    assert.equal(viewer.status, 200);
    assert.match(viewer.text, /<html/i);
  });

  it('when the body is malformed JSON or not an object then it is a 400', async () => {
    const token = await ctx.api.adminToken();
    for (const rawBody of ['{"role": {"name": "x"', '[1,2]', '"text"', 'nonsense']) {
      const response = await ctx.api.request('POST', '/api/v3/roles', { token, rawBody });
      assert.equal(response.status, 400, rawBody);
      assert.equal(response.body.success, false);
      assert.equal(response.body.errors[0].code, 'invalid');
      assert.equal(response.body.errors[0].param, 'body');
    }
  });

  it('when a GET or DELETE carries a JSON Content-Type and an empty body then it is served', async () => {
    const token = await ctx.api.adminToken();
    const list = await ctx.api.request('GET', '/api/v3/roles', { token, rawBody: '' });
    assert.equal(list.status, 200);
    const noContentType = await ctx.api.request('GET', '/api/v3/roles', {
      token,
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(noContentType.status, 200);
  });

  it('when the body is over 1 MiB then it is a 413', async () => {
    const token = await ctx.api.adminToken();
    const rawBody = JSON.stringify({ role: { name: 'x'.repeat(1024 * 1024 + 10), abilities: [] } });
    const response = await ctx.api.request('POST', '/api/v3/roles', { token, rawBody });
    assert.equal(response.status, 413);
    assert.equal(response.body.errors[0].code, 'too_large');
  });

  it('when the path names no endpoint then it is a 404 in the error shape', async () => {
    const response = await ctx.api.request('GET', '/api/v3/nothing-here');
    assert.equal(response.status, 404);
    assert.equal(response.body.errors[0].code, 'not_found');
  });

  it('when the key in the path names nothing the caller can see then the 404 names that parameter', async () => {
    const token = await ctx.api.adminToken();
    for (const [path, param] of [
      ['/api/v3/things/nosuchthing', 'thing_key'],
      ['/api/v3/thing_templates/nosuchtemplate', 'thing_template_key'],
      ['/api/v3/roles/nosuchrole', 'role_key'],
      ['/api/v3/users/nosuchuser', 'user_key'],
      ['/api/v3/groups/nosuchgroup', 'group_key'],
      ['/api/v3/gateway/nosuchgateway', 'gateway_key'],
      ['/api/v3/rules/nosuchrule', 'rule_key'],
      ['/api/v3/alerts/nosuchalert', 'alert_key'],
      ['/api/v3/key_pairs/nosuchpair', 'key_pair_key'],
      ['/api/v3/notification_actions/nosuchaction', 'notification_action_key'],
      ['/api/v3/dashboards/nosuchboard', 'dashboard_key'],
      ['/api/v3/audit_trails/nosuchtrail', 'audit_trail_key'],
    ] as const) {
      const response = await ctx.api.request('GET', path, { token });
      assert.equal(response.status, 404, path);
      assert.deepEqual(
        [response.body.errors[0].code, response.body.errors[0].param],
        ['not_found', param],
        `${path}: ${response.text}`,
      );
    }
  });

  it('when pretty=true is asked then error answers are indented too, from every layer', async () => {
    const token = await ctx.api.adminToken();
    for (const [path, status] of [
      ['/api/v3/alerts/nosuchalert', 404],
      ['/api/v3/nothing-here', 404],
      ['/api/v3/things', 401],
      ['/api/v3/roles?per=0', 400],
    ] as const) {
      const separator = path.includes('?') ? '&' : '?';
      const response = await ctx.api.request('GET', `${path}${separator}pretty=true`, {
        ...(status === 401 ? {} : { token }),
      });
      assert.equal(response.status, status, `${path}: ${response.text}`);
      assert.equal(response.text, JSON.stringify(response.body, null, 2), path);
      const plain = await ctx.api.request('GET', path, { ...(status === 401 ? {} : { token }) });
      assert.equal(plain.text, JSON.stringify(plain.body), path);
    }
  });

  it('when the path and the body disagree then the path wins', async () => {
    const token = await ctx.api.adminToken();
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 1 } });
    const key = roles.body.roles[0].role_key;
    const response = await ctx.api.request('GET', `/api/v3/roles/${key}`, { token, body: { role_key: 'someother1' } });
    assert.equal(response.status, 200);
    assert.equal(response.body.role.role_key, key);
  });

  it('when the body and the query string disagree then the body wins', async () => {
    const token = await ctx.api.adminToken();
    const response = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 'oops' }, body: { per: 1 } });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.roles.length, 1);
  });

  it('when an array comes as repeated keys or comma-separated text then both are read', async () => {
    const token = await ctx.api.adminToken();
    const repeated = await ctx.api.request('GET', '/api/v3/roles', {
      token,
      query: { field_list: ['name', 'abilities'] },
    });
    const comma = await ctx.api.request('GET', '/api/v3/roles', { token, query: { field_list: 'name,abilities' } });
    assert.equal(repeated.status, 200);
    assert.deepEqual(comma.body, repeated.body);
  });

  it('when a malformed request of any kind arrives then the server stays up', async () => {
    const token = await ctx.api.adminToken();
    const attempts = [
      { rawBody: '\u0000\u0001\u0002', headers: { 'content-type': 'application/octet-stream' } },
      { rawBody: '{"role":{"name":{"$gt":""},"abilities":[1e400]}}' },
      { rawBody: '{"__proto__":{"admin":true},"role":{"name":"p","abilities":[]}}' },
      { headers: { 'content-type': 'application/json; charset=' } },
    ];
    for (const attempt of attempts) {
      const response = await ctx.api.request('POST', '/api/v3/roles', { token, ...attempt });
      assert.ok(
        (response.status >= 400 && response.status < 500) || response.status === 200,
        `${response.status} ${response.text}`,
      );
      if (response.status !== 200) assert.equal(response.body.success, false);
      assert.ok(!/at .*\.ts|SELECT|INSERT|sqlite|postgres/i.test(response.text), response.text);
    }
    assert.equal((await ctx.api.request('GET', '/healthz')).status, 200);
  });
});
