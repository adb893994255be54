import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createRole, unique, userWithAbilities } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('key pairs', (ctx) => {
  it('when a key pair is created then its secret key is answered once and never again', async () => {
    const token = await ctx.api.adminToken();
    const created = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token,
      body: { key_pair: { name: 'line 1 gateway' } },
    });
    assert.equal(created.status, 200, created.text);
    const pair = created.body.key_pair;
    assert.match(pair.access_key, /^[0-9a-z]{40}$/);
    assert.match(pair.secret_key, /^[0-9a-z]{40}$/);
    assert.notEqual(pair.access_key, pair.secret_key);
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token, query: { search: 'Agent' } });
    assert.equal(
      pair.role_key,
      roles.body.roles.find((r: any) => r.name === 'Agent').role_key,
      'the Agent role by default',
    );
    const fetched = await ctx.api.request('GET', `/api/v3/key_pairs/${pair.key_pair_key}`, { token });
    assert.equal(fetched.body.key_pair.access_key, pair.access_key);
    assert.equal(fetched.body.key_pair.secret_key, undefined);
    const listed = await ctx.api.request('GET', '/api/v3/key_pairs', { token, query: { search: 'line 1' } });
    assert.ok(!listed.text.includes(pair.secret_key));
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: pair.key_pair_key },
    });
    assert.equal(audit.body.total_count, 1);
    assert.ok(!audit.text.includes(pair.secret_key), 'the secret never reaches an audit trail');
    const rows = await ctx.api.server.store.db.selectFrom('key_pairs').select('secret_key_sealed').execute();
    assert.ok(
      rows.every((r) => !r.secret_key_sealed.includes(pair.secret_key)),
      'the secret is sealed at rest',
    );
  });

  it('when a key pair names a role then it holds it, and that role cannot be deleted while it does', async () => {
    const token = await ctx.api.adminToken();
    const role = await createRole(ctx.api, token, [11, 122]);
    const created = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token,
      body: { key_pair: { name: 'k', role_key: role.role_key } },
    });
    assert.equal(created.body.key_pair.role_key, role.role_key);
    assert.equal((await ctx.api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token })).status, 409);
    const removed = await ctx.api.request('DELETE', `/api/v3/key_pairs/${created.body.key_pair.key_pair_key}`, {
      token,
    });
    assert.deepEqual(removed.body, {});
    assert.equal((await ctx.api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token })).status, 200);
    const unknown = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token,
      body: { key_pair: { name: 'k', role_key: role.role_key } },
    });
    assert.equal(unknown.status, 400, 'a role that is gone');
    assert.equal(unknown.body.errors[0].param, 'key_pair.role_key');
  });

  it('when a key pair request is wrong or foreign then it is a 400, 403 or 404', async () => {
    const token = await ctx.api.adminToken();
    assert.equal(
      (await ctx.api.request('POST', '/api/v3/key_pairs', { token, body: { key_pair: {} } })).body.errors[0].param,
      'key_pair.name',
    );
    const unknownRole = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token,
      body: { key_pair: { name: 'k', role_key: 'nosuchrole' } },
    });
    assert.equal(unknownRole.status, 400);
    assert.equal(unknownRole.body.errors[0].code, 'not_found');
    const child = await childOrganisation(ctx.api, token);
    const childPair = await ctx.api.request('POST', '/api/v3/key_pairs', {
      token: child.token,
      body: { key_pair: { name: 'c' } },
    });
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/key_pairs/${childPair.body.key_pair.key_pair_key}`, { token })).status,
      404,
    );
    const user = await userWithAbilities(ctx.api, token, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/key_pairs', { token: user.token })).status, 403);
  });

  it('when a key pair is deleted or its role loses a permission then its next device request is refused at once', async () => {
    const token = await ctx.api.adminToken();
    // Abilities 11, 12, 122: read and create things, create data (docs/api.md, "Permissions").
    const role = await createRole(ctx.api, token, [11, 12, 122]);
    const pair = await createKeyPair(ctx.api, token, { role_key: role.role_key });
    const device = new Device(ctx.api.url, pair);
    const key = unique('kp');
    assert.equal((await device.post('/api/v3/things/register.json', { thing_key: key, name: 'Pump' })).status, 200);
    const send = () => device.post('/api/v3/things/event.json', { thing_key: key, data: { rpm: 1 } });
    assert.equal((await send()).status, 200);
    const changed = await ctx.api.request('PUT', `/api/v3/roles/${role.role_key}`, {
      token,
      body: { role: { abilities: [11, 12] } },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal((await send()).status, 403, 'the role as it is now applies');
    const removed = await ctx.api.request('DELETE', `/api/v3/key_pairs/${pair.key_pair_key}`, { token });
    assert.equal(removed.status, 200);
    const refused = await send();
    assert.equal(refused.status, 401, refused.text);
  });

  it('when device settings are asked then they say the device API address and the broker ports, to key pair readers only', async () => {
    const token = await ctx.api.adminToken();
    // The suite's server has no plain MQTT listener (MQTT_PORT=0) and no TLS.
    const answer = await ctx.api.request('GET', '/api/v3/device_settings', { token });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body, {
      device_settings: {
        http_url: ctx.api.server.config.publicBaseUrl,
        mqtt_port: null,
        mqtts_port: null,
        external_broker: false,
      },
    });
    const reader = await userWithAbilities(ctx.api, token, [131]);
    assert.equal((await ctx.api.request('GET', '/api/v3/device_settings', { token: reader.token })).status, 200);
    const other = await userWithAbilities(ctx.api, token, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/device_settings', { token: other.token })).status, 403);
    assert.equal((await ctx.api.request('GET', '/api/v3/device_settings')).status, 401);

    const port = await freePort();
    const withBroker = await startServer(ctx.store, { env: { MQTT_PORT: String(port) } });
    try {
      const settings = await withBroker.request('GET', '/api/v3/device_settings', {
        token: await withBroker.adminToken(),
      });
      assert.equal(settings.body.device_settings.mqtt_port, port);
      assert.equal(settings.body.device_settings.mqtts_port, null);
    } finally {
      await withBroker.close();
    }
  });
});
