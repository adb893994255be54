import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, createRole, unique, userWithAbilities } from '../support/fixtures.ts';
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

  it('when a user who may update or delete users would change one of a wider role then it is a 403 and nothing changes', async () => {
    const token = await ctx.api.adminToken();
    const roles = (await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 100 } })).body.roles;
    const adminRole = roles.find((r: { name: string }) => r.name === 'Account Admin').role_key;
    const adminEmail = `${unique('admin')}@example.com`;
    const admin = await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email: adminEmail, password: 'the admin password', role_key: adminRole } },
    });
    assert.equal(admin.status, 200, admin.text);
    const wide = await userWithAbilities(ctx.api, token, [11, 12, 13]);
    const manager = await userWithAbilities(ctx.api, token, [11, 71, 73, 74]);
    for (const target of [admin.body.user.user_key as string, wide.userKey]) {
      for (const user of [{ password: 'taken over at last' }, { email: `${unique('x')}@example.com` }, { name: 'x' }]) {
        const changed = await ctx.api.request('PUT', `/api/v3/users/${target}`, {
          token: manager.token,
          body: { user },
        });
        assert.equal(changed.status, 403, changed.text);
        assert.equal(changed.body.errors[0].param, 'user_key');
      }
      const removed = await ctx.api.request('DELETE', `/api/v3/users/${target}`, { token: manager.token });
      assert.equal(removed.status, 403, removed.text);
    }
    // Nothing changed: both still sign in with their passwords.
    assert.ok(await ctx.api.signIn(adminEmail, 'the admin password'));
    assert.ok(await ctx.api.signIn(wide.email, wide.password));
    // Users of roles within the manager's own, the manager included, are its to change.
    const narrow = await userWithAbilities(ctx.api, token, [11]);
    for (const target of [narrow.userKey, manager.userKey]) {
      const changed = await ctx.api.request('PUT', `/api/v3/users/${target}`, {
        token: manager.token,
        body: { user: { name: 'Renamed' } },
      });
      assert.equal(changed.status, 200, changed.text);
    }
    assert.equal(
      (await ctx.api.request('DELETE', `/api/v3/users/${narrow.userKey}`, { token: manager.token })).status,
      200,
    );
  });

  it('when the last account admin would be deleted or given another role then it is a 409 and nothing changes', async () => {
    const child = await childOrganisation(ctx.api, await ctx.api.adminToken());
    const token = child.token;
    const listed = await ctx.api.request('GET', '/api/v3/users', { token });
    assert.equal(listed.body.total_count, 1, listed.text);
    const first = listed.body.users[0];
    const other = await createRole(ctx.api, token, [11]);
    const deleted = await ctx.api.request('DELETE', `/api/v3/users/${first.user_key}`, { token });
    assert.equal(deleted.status, 409, deleted.text);
    assert.equal(deleted.body.errors[0].param, 'user');
    assert.match(deleted.body.message, /last account admin/);
    const demoted = await ctx.api.request('PUT', `/api/v3/users/${first.user_key}`, {
      token,
      body: { user: { role_key: other.role_key } },
    });
    assert.equal(demoted.status, 409, demoted.text);
    assert.equal(demoted.body.errors[0].param, 'user.role_key');
    // Unchanged, and the same role given again is no change.
    const same = await ctx.api.request('PUT', `/api/v3/users/${first.user_key}`, {
      token,
      body: { user: { role_key: first.role_key, name: 'Still admin' } },
    });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.user.role_key, first.role_key);

    // With a second admin, either may go; then the one left stays.
    const email = `${unique('admin2')}@example.com`;
    const second = await ctx.api.request('POST', '/api/v3/users', {
      token,
      body: { user: { email, password: 'second admin password', role_key: first.role_key } },
    });
    assert.equal(second.status, 200, second.text);
    const secondToken = await ctx.api.signIn(email, 'second admin password');
    const moved = await ctx.api.request('PUT', `/api/v3/users/${first.user_key}`, {
      token: secondToken,
      body: { user: { role_key: other.role_key } },
    });
    assert.equal(moved.status, 200, moved.text);
    const self = await ctx.api.request('DELETE', `/api/v3/users/${second.body.user.user_key}`, { token: secondToken });
    assert.equal(self.status, 409, self.text);
    const back = await ctx.api.request('PUT', `/api/v3/users/${first.user_key}`, {
      token: secondToken,
      body: { user: { role_key: first.role_key } },
    });
    assert.equal(back.status, 200, back.text);
    assert.equal(
      (await ctx.api.request('DELETE', `/api/v3/users/${first.user_key}`, { token: secondToken })).status,
      200,
    );
  });

  it('when two account admins delete each other at once then one of them is left', async () => {
    const child = await childOrganisation(ctx.api, await ctx.api.adminToken());
    const first = (await ctx.api.request('GET', '/api/v3/users', { token: child.token })).body.users[0];
    for (let round = 0; round < 5; round++) {
      const email = `${unique('admin')}@example.com`;
      const second = await ctx.api.request('POST', '/api/v3/users', {
        token: child.token,
        body: { user: { email, password: 'another admin password', role_key: first.role_key } },
      });
      assert.equal(second.status, 200, second.text);
      const secondToken = await ctx.api.signIn(email, 'another admin password');
      const answers = await Promise.all([
        ctx.api.request('DELETE', `/api/v3/users/${second.body.user.user_key}`, { token: child.token }),
        ctx.api.request('DELETE', `/api/v3/users/${first.user_key}`, { token: secondToken }),
      ]);
      const statuses = answers.map((a) => a.status).sort();
      // One delete succeeds; the other finds itself the last admin (409), or its caller deleted (401).
      assert.equal(statuses.filter((s) => s === 200).length, 1, JSON.stringify(statuses));
      const oem = await ctx.api.signIn(undefined, undefined, child.organisationKey);
      const users = await ctx.api.request('GET', '/api/v3/users', { token: oem });
      const admins = users.body.users.filter((u: { role_key: string }) => u.role_key === first.role_key);
      assert.equal(admins.length, 1, users.text);
      if (answers[1]?.status === 200) break;
    }
  });
});
