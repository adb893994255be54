import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createRole, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('users', (ctx) => {
  async function newUser(token: string, extra: object = {}) {
    const role = await createRole(ctx.api, token, [11]);
    const email = `${unique('u')}@Example.com`;
    const response = await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email, password: 'password one', role_key: role.role_key, name: 'Ann', ...extra } },
    });
    return { response, email, role };
  }

  it('when a user is created then it is returned without any password and can sign in', async () => {
    const token = await ctx.api.adminToken();
    const { response, email, role } = await newUser(token, { time_zone: 'Mumbai' });
    assert.equal(response.status, 200, response.text);
    const user = response.body.user;
    assert.deepEqual(Object.keys(user).sort(), [
      'created_at',
      'email',
      'name',
      'role_key',
      'time_zone',
      'updated_at',
      'user_key',
    ]);
    assert.equal(user.email, email.toLowerCase());
    assert.equal(user.role_key, role.role_key);
    assert.equal(user.time_zone, 'Mumbai');
    assert.ok(!response.text.includes('password'));
    const session = await ctx.api.request('POST', '/api_sign_in', { body: { email, password: 'password one' } });
    assert.equal(session.status, 200);
    assert.equal(session.body.role, role.name);
    assert.equal(session.body.time_zone, 'Mumbai');
  });

  it('when users are listed, read, searched and deleted then each answer has the documented shape', async () => {
    const token = await ctx.api.adminToken();
    const { response, email } = await newUser(token);
    const key = response.body.user.user_key;
    const list = await ctx.api.request('GET', '/api/v3/users', {
      token,
      query: { search: email.split('@')[0] as string },
    });
    assert.equal(list.body.total_count, 1);
    assert.equal(list.body.users[0].user_key, key);
    const one = await ctx.api.request('GET', `/api/v3/users/${key}`, { token });
    assert.equal(one.body.user.email, email.toLowerCase());
    const removed = await ctx.api.request('DELETE', `/api/v3/users/${key}`, { token });
    assert.deepEqual(removed.body, {});
    assert.equal((await ctx.api.request('GET', `/api/v3/users/${key}`, { token })).status, 404);
    const signIn = await ctx.api.request('POST', '/api_sign_in', { body: { email, password: 'password one' } });
    assert.equal(signIn.status, 401);
  });

  it('when an e-mail address is taken, in any organisation, then creating or renaming to it is a 409', async () => {
    const token = await ctx.api.adminToken();
    const { email, role } = await newUser(token);
    const again = await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email: email.toUpperCase(), password: 'password two', role_key: role.role_key } },
    });
    assert.equal(again.status, 409);
    assert.equal(again.body.errors[0].code, 'conflict');
    const other = await newUser(token);
    const rename = await ctx.api.request('PUT', `/api/v3/users/${other.response.body.user.user_key}`, {
      token,
      body: { user: { email } },
    });
    assert.equal(rename.status, 409);
  });

  it('when a user’s time zone is changed then it is kept; an unknown zone is a 400 and changes nothing', async () => {
    const token = await ctx.api.adminToken();
    const { response } = await newUser(token, { time_zone: 'Mumbai' });
    const userKey = response.body.user.user_key as string;
    const moved = await ctx.api.request('PUT', `/api/v3/users/${userKey}`, {
      token,
      body: { user: { time_zone: 'Europe/Berlin' } },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.user.time_zone, 'Europe/Berlin');
    const unknown = await ctx.api.request('PUT', `/api/v3/users/${userKey}`, {
      token,
      body: { user: { time_zone: 'Atlantis/Capital' } },
    });
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(unknown.body.errors[0].param, 'user.time_zone');
    const read = await ctx.api.request('GET', `/api/v3/users/${userKey}`, { token });
    assert.equal(read.body.user.time_zone, 'Europe/Berlin');
  });

  it('when a user gets a new password then the old sessions end and the new password works', async () => {
    const token = await ctx.api.adminToken();
    const { response, email } = await newUser(token);
    const userToken = await ctx.api.signIn(email, 'password one');
    const updated = await ctx.api.request('PUT', `/api/v3/users/${response.body.user.user_key}`, {
      token,
      body: { user: { password: 'password two', name: 'Bea' } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.user.name, 'Bea');
    assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token: userToken })).status, 401);
    await ctx.api.signIn(email, 'password two');
  });

  it('when a user is moved to another role then the next request uses its permissions', async () => {
    const token = await ctx.api.adminToken();
    const { response, email } = await newUser(token);
    const userToken = await ctx.api.signIn(email, 'password one');
    assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token: userToken })).status, 403);
    const roleReader = await createRole(ctx.api, token, [61]);
    await ctx.api.request('PUT', `/api/v3/users/${response.body.user.user_key}`, {
      token,
      body: { user: { role_key: roleReader.role_key } },
    });
    assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token: userToken })).status, 200);
  });

  it('when a user is created with bad input then it is a 400 naming the field', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11]);
    const cases: [object, string, string][] = [
      [{ password: 'password one', role_key: role.role_key }, 'required', 'user.email'],
      [{ email: 'a@b.c', role_key: role.role_key }, 'required', 'user.password'],
      [{ email: 'a@b.c', password: 'password one' }, 'required', 'user.role_key'],
      [{ email: 'not an address', password: 'password one', role_key: role.role_key }, 'invalid', 'user.email'],
      [{ email: 'a@b.c', password: 'short', role_key: role.role_key }, 'invalid', 'user.password'],
      [{ email: 'a@b.c', password: 'password one', role_key: 'nosuchrole' }, 'not_found', 'user.role_key'],
      [
        { email: 'a@b.c', password: 'password one', role_key: role.role_key, time_zone: 'Nowhere' },
        'invalid',
        'user.time_zone',
      ],
      [
        { email: 'a@b.c', password: 'password one', role_key: role.role_key, admin: true },
        'unknown_field',
        'user.admin',
      ],
    ];
    for (const [user, code, param] of cases) {
      const response = await ctx.api.request('POST', '/api/v3/users', { token, body: { user } });
      assert.equal(response.status, 400, `${param}: ${response.text}`);
      assert.ok(
        response.body.errors.some((e: any) => e.code === code && e.param === param),
        `${code} ${param}: ${response.text}`,
      );
    }
    const list = await ctx.api.request('GET', '/api/v3/users', { token, query: { search: 'a@b.c' } });
    assert.equal(list.body.total_count, 0, 'nothing was half-written');
  });

  it('when a user lacks the user permission then the user endpoints are 403', async () => {
    const token = await ctx.api.adminToken();
    const { email } = await newUser(token);
    const userToken = await ctx.api.signIn(email, 'password one');
    assert.equal((await ctx.api.request('GET', '/api/v3/users', { token: userToken })).status, 403);
    assert.equal(
      (await ctx.api.request('POST', '/api/v3/users', { token: userToken, body: { user: {} } })).status,
      403,
    );
  });
});
