import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { childOrganisation, createRole, createThing, userWithAbilities } from '../support/fixtures.ts';
import { SocketClient } from '../support/realtime.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('API keys', (ctx) => {
  async function createKey(token: string, apiKey: Record<string, unknown>) {
    return ctx.api.request('POST', '/api/v3/api_keys', { token, body: { api_key: apiKey } });
  }

  it('when a key is made then its token is answered once, works as X-Auth-Token, and only its hash is stored', async () => {
    const token = await ctx.api.adminToken();
    const created = await createKey(token, { name: 'nightly export' });
    assert.equal(created.status, 200, created.text);
    const key = created.body.api_key;
    assert.match(key.token, /^tbk_[A-Za-z0-9_-]{43}$/);
    assert.equal(key.name, 'nightly export');
    assert.equal(typeof key.role_key, 'string');
    assert.equal(key.expires_at, null);
    assert.equal(key.last_used_at, null);
    const things = await ctx.api.request('GET', '/api/v3/things', { token: key.token });
    assert.equal(things.status, 200, things.text);
    const one = await ctx.api.request('GET', `/api/v3/api_keys/${key.api_key_key}`, { token });
    assert.equal(one.status, 200);
    assert.equal(one.body.api_key.token, undefined, 'not shown again');
    assert.equal(typeof one.body.api_key.last_used_at, 'number', 'its use is recorded');
    const list = await ctx.api.request('GET', '/api/v3/api_keys', { token });
    assert.ok(list.body.api_keys.some((k: { api_key_key: string }) => k.api_key_key === key.api_key_key));
    assert.ok(!list.text.includes(key.token));
    const rows = await ctx.api.server.store.db.selectFrom('api_keys').selectAll().execute();
    assert.ok(!JSON.stringify(rows).includes(key.token.slice(4)), 'the token is not stored');
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: key.api_key_key },
    });
    assert.equal(audit.body.audit_trails[0].entity_type, 'ApiKey');
    assert.ok(!audit.text.includes(key.token), 'nor audited');
  });

  it('when a key has a narrower role then its requests may do only what that role may', async () => {
    const token = await ctx.api.adminToken();
    const reader = await createRole(ctx.api, token, [11]);
    const key = (await createKey(token, { name: 'reader', role_key: reader.role_key })).body.api_key;
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: key.token })).status, 200);
    const write = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token: key.token,
      body: { thing_template: { name: 'nope' } },
    });
    assert.equal(write.status, 403);
  });

  it('when a user asks for a key whose role has a permission it lacks then it is a 403', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [11, 141, 142]);
    const own = await createKey(user.token, { name: 'mine' });
    assert.equal(own.status, 200, 'its own role: allowed');
    const writer = await createRole(ctx.api, token, [11, 12]);
    const wider = await createKey(user.token, { name: 'wider', role_key: writer.role_key });
    assert.equal(wider.status, 403, wider.text);
    assert.equal(wider.body.errors[0].code, 'forbidden');
    assert.equal(wider.body.errors[0].param, 'api_key.role_key');
    const everything = await userWithAbilities(ctx.api, token, [995]);
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token, query: { search: 'Account Admin' } });
    const admin = roles.body.roles.find((r: { name: string }) => r.name === 'Account Admin');
    const asAdmin = await createKey(everything.token, { name: 'admin', role_key: admin.role_key });
    assert.equal(asAdmin.status, 403, 'every permission, but not an account admin');
    const none = await userWithAbilities(ctx.api, token, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/api_keys', { token: none.token })).status, 403);
    assert.equal((await createKey(none.token, { name: 'x' })).status, 403);
  });

  it('when a user who may delete keys deletes another’s key then it must be one it could have given', async () => {
    const token = await ctx.api.adminToken();
    const adminKey = (await createKey(token, { name: 'integration' })).body.api_key;
    const keeper = await userWithAbilities(ctx.api, token, [11, 141, 142, 144]);
    const refused = await ctx.api.request('DELETE', `/api/v3/api_keys/${adminKey.api_key_key}`, {
      token: keeper.token,
    });
    assert.equal(refused.status, 403, refused.text);
    assert.deepEqual([refused.body.errors[0].code, refused.body.errors[0].param], ['forbidden', 'api_key_key']);
    assert.equal(
      (await ctx.api.request('GET', '/api/v3/things', { token: adminKey.token })).status,
      200,
      'it works on',
    );
    // One acting with a role the keeper could give, made by another, and its own, are deleted.
    const reader = await createRole(ctx.api, token, [11]);
    const narrow = (await createKey(token, { name: 'reader', role_key: reader.role_key })).body.api_key;
    const own = (await createKey(keeper.token, { name: 'mine' })).body.api_key;
    for (const key of [narrow, own]) {
      const deleted = await ctx.api.request('DELETE', `/api/v3/api_keys/${key.api_key_key}`, { token: keeper.token });
      assert.equal(deleted.status, 200, deleted.text);
    }
    const byAdmin = await ctx.api.request('DELETE', `/api/v3/api_keys/${adminKey.api_key_key}`, { token });
    assert.equal(byAdmin.status, 200, byAdmin.text);
  });

  it('when the user who made a key loses permissions then the key loses them too', async () => {
    const token = await ctx.api.adminToken();
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: 100 } });
    const admin = roles.body.roles.find((r: { name: string }) => r.name === 'Account Admin');
    const maker = await userWithAbilities(ctx.api, token, [11]);
    const promoted = await ctx.api.request('PUT', `/api/v3/users/${maker.userKey}`, {
      token,
      body: { user: { role_key: admin.role_key } },
    });
    assert.equal(promoted.status, 200, promoted.text);
    const makerToken = await ctx.api.signIn(maker.email, maker.password);
    const writer = await createRole(ctx.api, token, [11, 12, 71]);
    const asAdmin = (await createKey(makerToken, { name: 'admin', role_key: admin.role_key })).body.api_key;
    const asWriter = (await createKey(makerToken, { name: 'writer', role_key: writer.role_key })).body.api_key;
    for (const key of [asAdmin, asWriter]) {
      assert.equal((await ctx.api.request('GET', '/api/v3/users', { token: key.token })).status, 200);
    }
    // The maker goes back to reading things only: so do its keys.
    const demoted = await ctx.api.request('PUT', `/api/v3/users/${maker.userKey}`, {
      token,
      body: { user: { role_key: maker.role.role_key } },
    });
    assert.equal(demoted.status, 200, demoted.text);
    for (const key of [asAdmin, asWriter]) {
      assert.equal((await ctx.api.request('GET', '/api/v3/users', { token: key.token })).status, 403);
      const made = await ctx.api.request('POST', '/api/v3/things', {
        token: key.token,
        body: { thing: { name: 'not allowed' } },
      });
      assert.equal(made.status, 403, made.text);
      assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: key.token })).status, 200);
      const caller = await ctx.api.request('GET', '/api/v3/caller', { token: key.token });
      assert.equal(caller.body.caller.account_admin, false);
      assert.deepEqual(caller.body.caller.abilities, [11]);
    }
  });

  it('when the input is wrong then it is a 400; a key of another organisation or none is a 404', async () => {
    const token = await ctx.api.adminToken();
    for (const bad of [
      {},
      { name: '' },
      { name: 'past', expires_at: 1_000_000 },
      // Past the last instant a date can name: no answer could show it.
      { name: 'far', expires_at: 8_640_000_000_001 },
      { name: 'x', extra: 1 },
    ]) {
      const refused = await createKey(token, bad);
      assert.equal(refused.status, 400, JSON.stringify(bad));
      assert.equal(refused.body.success, false);
    }
    assert.equal((await createKey(token, { name: 'last', expires_at: 8_640_000_000_000 })).status, 200);
    assert.equal((await createKey(token, { name: 'r', role_key: 'no-such-role' })).status, 400);
    const child = await childOrganisation(ctx.api, token);
    const theirs = (await createKey(child.token, { name: 'theirs' })).body.api_key;
    assert.equal((await ctx.api.request('GET', `/api/v3/api_keys/${theirs.api_key_key}`, { token })).status, 404);
    assert.equal((await ctx.api.request('DELETE', `/api/v3/api_keys/${theirs.api_key_key}`, { token })).status, 404);
    const none = await ctx.api.request('GET', '/api/v3/api_keys/no-such-key', { token });
    assert.equal(none.status, 404);
    assert.equal(none.body.errors[0].param, 'api_key_key', 'named as every resource names its key');
  });

  it('when an OEM parent makes a key with child_organisation_key then it acts in that child only; is_oem lists, reads and deletes it', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const created = await ctx.api.request('POST', '/api/v3/api_keys', {
      token,
      body: { is_oem: true, child_organisation_key: child.organisationKey, api_key: { name: 'customer key' } },
    });
    assert.equal(created.status, 200, created.text);
    const key = created.body.api_key;
    const caller = await ctx.api.request('GET', '/api/v3/caller', { token: key.token });
    assert.equal(caller.status, 200, caller.text);
    assert.equal(caller.body.organisation_key ?? caller.body.caller?.organisation_key, child.organisationKey);
    const childRoles = await ctx.api.request('GET', '/api/v3/roles', { token: child.token, query: { per: 100 } });
    assert.ok(
      childRoles.body.roles.some((r: { role_key: string }) => r.role_key === key.role_key),
      "one of the child's roles",
    );
    const parentThings = await ctx.api.request('GET', '/api/v3/things', { token, query: { per: 1 } });
    const seen = await ctx.api.request('GET', '/api/v3/things', { token: key.token, query: { per: 1000 } });
    assert.equal(seen.status, 200);
    assert.ok(seen.body.total_count < parentThings.body.total_count || parentThings.body.total_count === 0);
    const own = await ctx.api.request('GET', '/api/v3/api_keys', { token, query: { per: 1000 } });
    assert.ok(!own.body.api_keys.some((k: { api_key_key: string }) => k.api_key_key === key.api_key_key));
    const withChildren = await ctx.api.request('GET', '/api/v3/api_keys', {
      token,
      query: { per: 1000, is_oem: true },
    });
    assert.ok(withChildren.body.api_keys.some((k: { api_key_key: string }) => k.api_key_key === key.api_key_key));
    const inChild = await ctx.api.request('GET', '/api/v3/api_keys', { token: child.token });
    assert.deepEqual(
      inChild.body.api_keys.map((k: { api_key_key: string }) => k.api_key_key),
      [key.api_key_key],
    );
    const path = `/api/v3/api_keys/${key.api_key_key}`;
    assert.equal((await ctx.api.request('GET', path, { token })).status, 404, 'without is_oem');
    assert.equal((await ctx.api.request('GET', path, { token, query: { is_oem: true } })).status, 200);
    assert.equal((await ctx.api.request('DELETE', path, { token, query: { is_oem: true } })).status, 200);
    assert.equal((await ctx.api.request('GET', '/api/v3/caller', { token: key.token })).status, 401);
  });

  it('when a non-OEM organisation gives is_oem then it is a 403, on API keys, events and usage alike', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const thing = await createThing(ctx.api, child.token, { name: 'Theirs' });
    const asked: [string, string, object][] = [
      ['GET', '/api/v3/api_keys', { query: { is_oem: true } }],
      ['POST', '/api/v3/api_keys', { body: { is_oem: true, api_key: { name: 'k' } } }],
      ['GET', '/api/v3/usage', { query: { is_oem: 'true' } }],
      ['GET', '/api/v3/fleet_summary', { query: { is_oem: 'true' } }],
      [
        'POST',
        `/api/v3/things/${thing.thing_key}/events`,
        { query: { is_oem: true }, body: { events: [{ data: { v: 1 } }] } },
      ],
    ];
    for (const [method, path, options] of asked) {
      const answer = await ctx.api.request(method, path, { token: child.token, ...options });
      assert.equal(answer.status, 403, `${method} ${path}: ${answer.text}`);
      assert.match(answer.body.message, /is_oem/);
    }
  });

  it('when a key expires or is deleted then its token is refused at once, and its sockets closed', async () => {
    const token = await ctx.api.adminToken();
    const soon = Math.floor(Date.now() / 1000) + 2;
    const brief = (await createKey(token, { name: 'brief', expires_at: soon })).body.api_key;
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: brief.token })).status, 200);
    await sleep(Math.max(0, soon * 1000 - Date.now()) + 100);
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: brief.token })).status, 401);

    const key = (await createKey(token, { name: 'doomed' })).body.api_key;
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: key.token })).status, 200);
    const socket = await SocketClient.open(ctx.api.url, key.token);
    assert.equal((await socket.subscribe('t', 'things')).type, 'subscribed');
    const deleted = await ctx.api.request('DELETE', `/api/v3/api_keys/${key.api_key_key}`, { token });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: key.token })).status, 401);
    assert.equal((await socket.closed).code, 4401);
  });

  it('when a key is used to sign out then it is a 400 naming the deletion that revokes it, and the key keeps working', async () => {
    const token = await ctx.api.adminToken();
    const key = (await createKey(token, { name: 'signing out' })).body.api_key;
    const signOut = await ctx.api.request('DELETE', '/api_sign_out', { token: key.token });
    assert.equal(signOut.status, 400, signOut.text);
    assert.equal(signOut.body.success, false);
    assert.equal(signOut.body.errors.length, 1);
    assert.equal(signOut.body.errors[0].code, 'invalid');
    assert.match(signOut.body.errors[0].message, /DELETE \/api\/v3\/api_keys\/:api_key_key/);
    assert.equal(signOut.body.message, signOut.body.errors[0].message);
    assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: key.token })).status, 200);
    const kept = await ctx.api.request('GET', `/api/v3/api_keys/${key.api_key_key}`, { token });
    assert.equal(kept.status, 200, 'the key is not deleted');
  });

  it('when two servers share a PostgreSQL store then a key deleted through one is refused by the other at once', {
    skip: ctx.store.name === 'postgres' ? false : 'one server per SQLite store',
  }, async () => {
    const other = await startServer(ctx.store, { storeSettings: ctx.api.storeSettings });
    try {
      const token = await ctx.api.adminToken();
      const key = (await createKey(token, { name: 'shared' })).body.api_key;
      assert.equal((await other.request('GET', '/api/v3/things', { token: key.token })).status, 200);
      assert.equal((await other.request('GET', '/api/v3/things', { token: key.token })).status, 200);
      await ctx.api.request('DELETE', `/api/v3/api_keys/${key.api_key_key}`, { token });
      const deadline = Date.now() + 1000;
      let status = (await other.request('GET', '/api/v3/things', { token: key.token })).status;
      while (status === 200 && Date.now() < deadline) {
        await sleep(20);
        status = (await other.request('GET', '/api/v3/things', { token: key.token })).status;
      }
      assert.equal(status, 401);
    } finally {
      await other.close();
    }
  });
});
