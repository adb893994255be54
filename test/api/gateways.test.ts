import assert from 'node:assert/strict';
import { it } from 'node:test';
import { assertTokenRequired, childOrganisation, unique, userWithAbilities } from '../support/fixtures.ts';
import type { TestServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

async function createGateway(api: TestServer, token: string, fields: object = {}, extra: object = {}) {
  const response = await api.request('POST', '/api/v3/gateway', {
    token,
    body: { gateway: { name: unique('gw'), ...fields }, ...extra },
  });
  assert.equal(response.status, 200, response.text);
  return response.body.gateway;
}

async function auditCount(api: TestServer, token: string): Promise<number> {
  const response = await api.request('GET', '/api/v3/audit_trails', { token, query: { per: 1 } });
  assert.equal(response.status, 200, response.text);
  return response.body.total_count as number;
}

async function auditOf(api: TestServer, token: string, entityKey: string) {
  const response = await api.request('GET', '/api/v3/audit_trails', {
    token,
    query: { entity_key: entityKey, order_by: 'timestamp', order: 'asc', per: 100 },
  });
  assert.equal(response.status, 200, response.text);
  return response.body.audit_trails as any[];
}

const toDataUri = (value: unknown) =>
  `data:application/json;base64,${Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64')}`;

const fromDataUri = (uri: string) => {
  const match = /^data:application\/json;base64,(.*)$/.exec(uri);
  assert.ok(match, uri);
  return JSON.parse(Buffer.from(match[1] as string, 'base64').toString('utf8'));
};

describeOnStores('gateways', (ctx) => {
  it('when a gateway is created then it has exactly the documented fields and adapters get their defaults', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Plant gateway');
    const response = await ctx.api.request('POST', '/api/v3/gateway', {
      token,
      body: {
        gateway: {
          name,
          gateway_type: 'modbus',
          gateway_version: '1.2.0',
          tags: ['plant', 'line-1'],
          adapters: [
            {
              type: 'modbus-tcp',
              configuration: '{"host": "10.0.0.5", "port": 502}',
              enabled: false,
              adapter_pid: 'p1',
            },
            {},
          ],
        },
      },
    });
    assert.equal(response.status, 200, response.text);
    const gateway = response.body.gateway;
    assert.deepEqual(Object.keys(gateway), [
      'gateway_key',
      'gateway_type',
      'name',
      'gateway_version',
      'tags',
      'adapters',
    ]);
    assert.match(gateway.gateway_key, /^[0-9a-z]{10}$/);
    assert.equal(gateway.name, name);
    assert.equal(gateway.gateway_type, 'modbus');
    assert.equal(gateway.gateway_version, '1.2.0');
    assert.equal(gateway.tags, 'plant,line-1');
    assert.deepEqual(gateway.adapters[0], {
      type: 'modbus-tcp',
      configuration: '{"host": "10.0.0.5", "port": 502}',
      enabled: false,
      adapter_pid: 'p1',
    });
    assert.deepEqual(Object.keys(gateway.adapters[1]), ['type', 'configuration', 'enabled', 'adapter_pid']);
    assert.equal(gateway.adapters[1].type, null);
    assert.equal(gateway.adapters[1].configuration, '{}');
    assert.equal(gateway.adapters[1].enabled, true);
    assert.match(gateway.adapters[1].adapter_pid, /^[0-9a-z]{10}$/);

    const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.equal(fetched.status, 200, fetched.text);
    assert.deepEqual(fetched.body, { gateway });

    const audit = await auditOf(ctx.api, token, gateway.gateway_key);
    assert.equal(audit.length, 1);
    assert.equal(audit[0].action_taken, 'create');
    assert.equal(audit[0].entity_type, 'Gateway');
    assert.equal(audit[0].entity_name, name);
    assert.equal(audit[0].user_name, 'admin@example.com');
    assert.deepEqual(audit[0].old_entity_contents, {});
    assert.deepEqual(audit[0].new_entity_contents, gateway);
  });

  it('when only a name is given then type and version are null, tags empty and adapters none', async () => {
    const token = await ctx.api.adminToken();
    const gateway = await createGateway(ctx.api, token);
    assert.equal(gateway.gateway_type, null);
    assert.equal(gateway.gateway_version, null);
    assert.equal(gateway.tags, '');
    assert.deepEqual(gateway.adapters, []);
  });

  it('when tags come as a comma-joined string then they are trimmed, emptied ones dropped and repeats kept once', async () => {
    const token = await ctx.api.adminToken();
    const fromString = await createGateway(ctx.api, token, { tags: ' north , south,,north ' });
    assert.equal(fromString.tags, 'north,south');
    const fromArray = await createGateway(ctx.api, token, { tags: ['east', 'west,up'] });
    assert.equal(fromArray.tags, 'east,west,up');
  });

  it('when a gateway is updated then given fields change, the others stay and adapters are replaced', async () => {
    const token = await ctx.api.adminToken();
    const gateway = await createGateway(ctx.api, token, {
      gateway_type: 'opc-ua',
      tags: 'a,b',
      adapters: [{ type: 'x', configuration: '[1]', adapter_pid: 'keep' }],
    });
    const response = await ctx.api.request('PUT', `/api/v3/gateway/${gateway.gateway_key}`, {
      token,
      body: { gateway: { gateway_version: '2.0', adapters: [{ type: 'y', configuration: '"text"' }] } },
    });
    assert.equal(response.status, 200, response.text);
    const updated = response.body.gateway;
    assert.equal(updated.name, gateway.name);
    assert.equal(updated.gateway_type, 'opc-ua');
    assert.equal(updated.gateway_version, '2.0');
    assert.equal(updated.tags, 'a,b');
    assert.equal(updated.adapters.length, 1);
    assert.equal(updated.adapters[0].type, 'y');
    assert.equal(updated.adapters[0].configuration, '"text"');
    assert.equal('updated_at' in updated, false);

    const cleared = await ctx.api.request('PUT', `/api/v3/gateway/${gateway.gateway_key}`, {
      token,
      body: { gateway: { gateway_type: null, tags: [], adapters: [] } },
    });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.gateway.gateway_type, null);
    assert.equal(cleared.body.gateway.tags, '');
    assert.deepEqual(cleared.body.gateway.adapters, []);
    const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.deepEqual(fetched.body.gateway, cleared.body.gateway);

    const audit = await auditOf(ctx.api, token, gateway.gateway_key);
    assert.deepEqual(
      audit.map((a) => a.action_taken),
      ['create', 'update', 'update'],
    );
    assert.deepEqual(audit[1].old_entity_contents, gateway);
    assert.deepEqual(audit[1].new_entity_contents, updated);
  });

  it('when a gateway is deleted then it is gone, the answer is {} and the deletion is audited', async () => {
    const token = await ctx.api.adminToken();
    const gateway = await createGateway(ctx.api, token);
    const deleted = await ctx.api.request('DELETE', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, {});
    const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.equal(fetched.status, 404);
    assert.equal(fetched.body.errors[0].code, 'not_found');
    const again = await ctx.api.request('DELETE', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.equal(again.status, 404);
    const audit = await auditOf(ctx.api, token, gateway.gateway_key);
    assert.equal(audit.length, 2);
    assert.equal(audit[1].action_taken, 'delete');
    assert.deepEqual(audit[1].old_entity_contents, gateway);
    assert.deepEqual(audit[1].new_entity_contents, {});
  });

  it('when gateways are listed then the array is named gateway, 20 come by default and the newest is first', async () => {
    const token = await ctx.api.adminToken();
    for (let i = 0; i < 21; i++) await createGateway(ctx.api, token);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const newest = await createGateway(ctx.api, token);
    const response = await ctx.api.request('GET', '/api/v3/gateway', { token });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), ['gateway', 'page', 'total_count']);
    assert.equal(response.body.page, 1);
    assert.equal(response.body.gateway.length, 20);
    assert.ok(response.body.total_count >= 22);
    assert.deepEqual(response.body.gateway[0], newest);
    const asString = await ctx.api.request('GET', '/api/v3/gateway', { token, body: { page: '2', per: '5' } });
    assert.equal(asString.status, 200, asString.text);
    assert.equal(asString.body.page, '2');
    assert.equal(asString.body.gateway.length, 5);
    const past = await ctx.api.request('GET', '/api/v3/gateway', { token, query: { page: 999 } });
    assert.deepEqual(past.body.gateway, []);
    assert.equal(past.body.total_count, response.body.total_count);
  });

  it('when paging through gateways sorted by name or key then every gateway appears exactly once in order', async () => {
    const token = await ctx.api.adminToken();
    const all = await ctx.api.request('GET', '/api/v3/gateway', { token, query: { per: 1000 } });
    for (const orderBy of ['name', 'gateway_key', 'updated_at'] as const) {
      const seen: any[] = [];
      for (let page = 1; page <= Math.ceil(all.body.total_count / 7) + 1; page++) {
        const response = await ctx.api.request('GET', '/api/v3/gateway', {
          token,
          query: { per: 7, page, order_by: orderBy, order: 'asc' },
        });
        assert.equal(response.status, 200, response.text);
        assert.equal(response.body.total_count, all.body.total_count);
        seen.push(...response.body.gateway);
      }
      assert.equal(seen.length, all.body.total_count);
      assert.equal(new Set(seen.map((g) => g.gateway_key)).size, seen.length);
      if (orderBy === 'gateway_key') {
        const keys = seen.map((g) => g.gateway_key);
        assert.deepEqual(keys, [...keys].sort());
      }
    }
    const desc = await ctx.api.request('GET', '/api/v3/gateway', {
      token,
      query: { per: 1000, order_by: 'gateway_key', order: 'desc' },
    });
    const keys = desc.body.gateway.map((g: any) => g.gateway_key);
    assert.deepEqual(keys, [...keys].sort().reverse());
  });

  it('when search is given then keywords match name or tags case-insensitively with scope all or any', async () => {
    const token = await ctx.api.adminToken();
    const word = unique('kappa');
    const byName = await createGateway(ctx.api, token, { name: `${word} Boiler room`, tags: 'heat' });
    const byTag = await createGateway(ctx.api, token, { name: unique('plain'), tags: [`${word}-site`, 'cold'] });
    const list = async (query: Record<string, string>) => {
      const response = await ctx.api.request('GET', '/api/v3/gateway', {
        token,
        query: { per: 1000, order_by: 'gateway_key', order: 'asc', ...query },
      });
      assert.equal(response.status, 200, response.text);
      return (response.body.gateway as any[]).map((g) => g.gateway_key);
    };
    const both = [byName.gateway_key, byTag.gateway_key].sort();
    assert.deepEqual(await list({ search: word.toUpperCase() }), both);
    assert.deepEqual(await list({ search: `${word} boiler` }), [byName.gateway_key]);
    assert.deepEqual(await list({ search: `${word} COLD` }), [byTag.gateway_key]);
    assert.deepEqual(
      await list({ search: `${word}-nomatch heat cold`, scope: 'any' }).then((k) => k.filter((x) => both.includes(x))),
      both,
    );
    assert.deepEqual(await list({ search: `${word} heat cold` }), []);
    // The comma-joined tags are what a keyword is matched against, JSON punctuation is not.
    assert.deepEqual(await list({ search: `${word}-site,cold` }), [byTag.gateway_key]);
    assert.deepEqual(await list({ search: `${word} [` }), []);
    assert.deepEqual(await list({ search: `${word} "` }), []);
  });

  it('when the configuration is asked then it is a data URI of the gateway object as GET returns it', async () => {
    const token = await ctx.api.adminToken();
    const gateway = await createGateway(ctx.api, token, {
      gateway_type: 'edge',
      tags: 'x,y',
      adapters: [{ type: 'mqtt', configuration: '{"topic": "a/b", "qos": 1}', enabled: true }],
    });
    const response = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}/configuration`, { token });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(Object.keys(response.body), ['result']);
    const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.deepEqual(fromDataUri(response.body.result), fetched.body.gateway);
    const missing = await ctx.api.request('GET', '/api/v3/gateway/nosuchgway/configuration', { token });
    assert.equal(missing.status, 404);
  });

  for (const path of ['/api/v3/gateway/register', '/api/v3/gateways/register']) {
    it(`when a gateway registers in the declared form at ${path} then type, version and configuration are stored`, async () => {
      const token = await ctx.api.adminToken();
      const gateway = await createGateway(ctx.api, token, { tags: 'old', adapters: [{ type: 'gone' }] });
      const before = await auditCount(ctx.api, token);
      const configuration = toDataUri({
        name: 'Renamed by the gateway',
        gateway_type: 'overridden by type',
        tags: ['field', 'remote'],
        adapters: [{ type: 'serial', configuration: '{"baud": 9600}', adapter_pid: 'serial-1' }],
      });
      const response = await ctx.api.request('POST', path, {
        token,
        body: { gateway_key: gateway.gateway_key, type: 'edge-box', version: '3.1', configuration },
      });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {});
      const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
      assert.deepEqual(fetched.body.gateway, {
        gateway_key: gateway.gateway_key,
        gateway_type: 'edge-box',
        name: 'Renamed by the gateway',
        gateway_version: '3.1',
        tags: 'field,remote',
        adapters: [{ type: 'serial', configuration: '{"baud": 9600}', enabled: true, adapter_pid: 'serial-1' }],
      });
      assert.equal(await auditCount(ctx.api, token), before + 1);
      const audit = await auditOf(ctx.api, token, gateway.gateway_key);
      assert.equal(audit.at(-1).action_taken, 'update');
      assert.deepEqual(audit.at(-1).old_entity_contents, gateway);
      assert.deepEqual(audit.at(-1).new_entity_contents, fetched.body.gateway);
    });

    it(`when a gateway registers in the example form at ${path} then the gateway object is read`, async () => {
      const token = await ctx.api.adminToken();
      const gateway = await createGateway(ctx.api, token, { tags: 'kept' });
      const response = await ctx.api.request('POST', path, {
        token,
        body: {
          gateway: {
            gateway_key: gateway.gateway_key,
            gateway_version: '0.9',
            gateway_type: 'pi',
            config: JSON.stringify({ adapters: [{ type: 'gpio', configuration: '{"pin": 4}', enabled: false }] }),
          },
        },
      });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {});
      const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
      const stored = fetched.body.gateway;
      assert.equal(stored.gateway_type, 'pi');
      assert.equal(stored.gateway_version, '0.9');
      assert.equal(stored.name, gateway.name);
      assert.equal(stored.tags, 'kept');
      assert.equal(stored.adapters.length, 1);
      assert.equal(stored.adapters[0].type, 'gpio');
      assert.equal(stored.adapters[0].enabled, false);

      const viaDataUri = await ctx.api.request('POST', path, {
        token,
        body: { gateway: { gateway_key: gateway.gateway_key, config: toDataUri({ tags: 'new' }) } },
      });
      assert.equal(viaDataUri.status, 200, viaDataUri.text);
      const again = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
      assert.equal(again.body.gateway.tags, 'new');
      assert.deepEqual(again.body.gateway.adapters, stored.adapters);
    });
  }

  it('when a gateway sends back the configuration it was given then nothing changes, and text, percent-encoded and object configurations are read', async () => {
    const token = await ctx.api.adminToken();
    const gateway = await createGateway(ctx.api, token, {
      gateway_type: 't',
      tags: 'a',
      adapters: [{ type: 'k', configuration: '{"a":1}' }],
    });
    const configuration = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}/configuration`, {
      token,
    });
    const response = await ctx.api.request('POST', '/api/v3/gateway/register', {
      token,
      body: { gateway_key: gateway.gateway_key, configuration: configuration.body.result },
    });
    assert.equal(response.status, 200, response.text);
    const fetched = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.deepEqual(fetched.body.gateway, gateway);
    const plainText = await ctx.api.request('POST', '/api/v3/gateway/register', {
      token,
      body: { gateway_key: gateway.gateway_key, configuration: 'data:,%7B%22name%22%3A%22percent%22%7D' },
    });
    assert.equal(plainText.status, 200, plainText.text);
    const renamed = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.equal(renamed.body.gateway.name, 'percent');
    const asObject = await ctx.api.request('POST', '/api/v3/gateway/register', {
      token,
      body: { gateway_key: gateway.gateway_key, type: null, configuration: { gateway_version: '5', tags: 'o' } },
    });
    assert.equal(asObject.status, 200, asObject.text);
    const fromObject = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.equal(fromObject.body.gateway.gateway_type, null);
    assert.equal(fromObject.body.gateway.gateway_version, '5');
    assert.equal(fromObject.body.gateway.tags, 'o');
  });

  describeBadInput();

  function describeBadInput() {
    type Case = [string, string, string, (key: string) => object, number, string, string | undefined];
    const create = (gateway: object) => () => ({ gateway });
    const register = (body: object) => (key: string) => ({ gateway_key: key, ...body });
    const cases: Case[] = [
      ['a missing name', 'POST', '/api/v3/gateway', create({ tags: 'a' }), 400, 'required', 'gateway.name'],
      ['a missing gateway object', 'POST', '/api/v3/gateway', () => ({}), 400, 'required', 'gateway'],
      ['an empty name', 'POST', '/api/v3/gateway', create({ name: '' }), 400, 'invalid', 'gateway.name'],
      [
        'an unknown field',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', colour: 'red' }),
        400,
        'unknown_field',
        'gateway.colour',
      ],
      [
        'an unknown adapter field',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', adapters: [{ type: 'a', port: 1 }] }),
        400,
        'unknown_field',
        'gateway.adapters.0.port',
      ],
      [
        'an adapter configuration that is not JSON text',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', adapters: [{ configuration: '{}' }, { configuration: '{not json' }] }),
        400,
        'invalid',
        'gateway.adapters.1.configuration',
      ],
      [
        'an adapter configuration that is an object, not text',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', adapters: [{ configuration: { a: 1 } }] }),
        400,
        'invalid',
        'gateway.adapters.0.configuration',
      ],
      [
        'an enabled that is not a boolean',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', adapters: [{ enabled: 'maybe' }] }),
        400,
        'invalid',
        'gateway.adapters.0.enabled',
      ],
      [
        'two adapters with one adapter_pid',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', adapters: [{ adapter_pid: 'p' }, { adapter_pid: 'p' }] }),
        400,
        'invalid',
        'gateway.adapters.1.adapter_pid',
      ],
      [
        'a name of the wrong type',
        'POST',
        '/api/v3/gateway',
        create({ name: { a: 1 } }),
        400,
        'invalid',
        'gateway.name',
      ],
      [
        'tags of the wrong type',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', tags: { a: 1 } }),
        400,
        'invalid',
        'gateway.tags',
      ],
      [
        'adapters of the wrong type',
        'POST',
        '/api/v3/gateway',
        create({ name: 'x', adapters: 5 }),
        400,
        'invalid',
        'gateway.adapters',
      ],
      ['per above 1000', 'GET', '/api/v3/gateway', () => ({ per: 1001 }), 400, 'invalid', 'per'],
      ['per of 0', 'GET', '/api/v3/gateway', () => ({ per: 0 }), 400, 'invalid', 'per'],
      ['a non-numeric page', 'GET', '/api/v3/gateway', () => ({ page: 'one' }), 400, 'invalid', 'page'],
      ['an unknown order_by', 'GET', '/api/v3/gateway', () => ({ order_by: 'adapters' }), 400, 'invalid', 'order_by'],
      ['an unknown order', 'GET', '/api/v3/gateway', () => ({ order: 'up' }), 400, 'invalid', 'order'],
      ['an unknown scope', 'GET', '/api/v3/gateway', () => ({ scope: 'some' }), 400, 'invalid', 'scope'],
      ['an unknown gateway key', 'GET', '/api/v3/gateway/nosuchgway', () => ({}), 404, 'not_found', undefined],
      [
        'an update of an unknown key',
        'PUT',
        '/api/v3/gateway/nosuchgway',
        () => ({ gateway: { name: 'y' } }),
        404,
        'not_found',
        undefined,
      ],
      ['a delete of an unknown key', 'DELETE', '/api/v3/gateway/nosuchgway', () => ({}), 404, 'not_found', undefined],
      [
        'an update with an unknown field',
        'PUT',
        '/api/v3/gateway/:key',
        () => ({ gateway: { gateway_kind: 'y' } }),
        400,
        'unknown_field',
        'gateway.gateway_kind',
      ],
      [
        'an update with a bad adapter configuration',
        'PUT',
        '/api/v3/gateway/:key',
        () => ({ gateway: { adapters: [{ configuration: 'nope' }] } }),
        400,
        'invalid',
        'gateway.adapters.0.configuration',
      ],
      [
        'an update without the gateway object',
        'PUT',
        '/api/v3/gateway/:key',
        () => ({ name: 'x' }),
        400,
        'required',
        'gateway',
      ],
      [
        'a registration of an unknown key',
        'POST',
        '/api/v3/gateway/register',
        () => ({ gateway_key: 'nosuchgway', type: 't' }),
        404,
        'not_found',
        undefined,
      ],
      [
        'a registration without a gateway_key',
        'POST',
        '/api/v3/gateway/register',
        () => ({ type: 't', version: '1' }),
        400,
        'required',
        'gateway_key',
      ],
      [
        'a registration with a malformed data URI',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: 'data:application/json;base64' }),
        400,
        'invalid',
        'configuration',
      ],
      [
        'a registration with malformed base64',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: 'data:application/json;base64,e30*!' }),
        400,
        'invalid',
        'configuration',
      ],
      [
        'a registration whose data URI holds no JSON',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: toDataUri('not json at all') }),
        400,
        'invalid',
        'configuration',
      ],
      [
        'a registration whose configuration is not JSON text',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: '{adapters: []' }),
        400,
        'invalid',
        'configuration',
      ],
      [
        'a registration whose configuration is a JSON array',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: toDataUri([1, 2]) }),
        400,
        'invalid',
        'configuration',
      ],
      [
        'a registration whose configuration has an unknown field',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: toDataUri({ colour: 'red' }) }),
        400,
        'unknown_field',
        'configuration.colour',
      ],
      [
        'a registration whose example config has a bad adapter configuration',
        'POST',
        '/api/v3/gateway/register',
        (key) => ({ gateway: { gateway_key: key, config: { adapters: [{ configuration: '{' }] } } }),
        400,
        'invalid',
        'gateway.config.adapters.0.configuration',
      ],
      [
        'a registration whose configuration names another gateway',
        'POST',
        '/api/v3/gateway/register',
        register({ configuration: toDataUri({ gateway_key: 'othergway1' }) }),
        400,
        'invalid',
        'configuration.gateway_key',
      ],
      [
        'a registration whose two forms name different gateways',
        'POST',
        '/api/v3/gateway/register',
        register({ gateway: { gateway_key: 'othergway1' } }),
        400,
        'invalid',
        'gateway.gateway_key',
      ],
      [
        'a registration with an unknown field in the gateway object',
        'POST',
        '/api/v3/gateway/register',
        (key) => ({ gateway: { gateway_key: key, colour: 'red' } }),
        400,
        'unknown_field',
        'gateway.colour',
      ],
    ];
    for (const [what, method, path, body, status, code, param] of cases) {
      it(`when a request carries ${what} then it is a ${status} naming the problem and nothing is written`, async () => {
        const token = await ctx.api.adminToken();
        const gateway = await createGateway(ctx.api, token, { tags: 'untouched' });
        const before = await auditCount(ctx.api, token);
        const response = await ctx.api.request(method, path.replace(':key', gateway.gateway_key), {
          token,
          body: body(gateway.gateway_key),
        });
        assert.equal(response.status, status, response.text);
        assert.equal(response.body.success, false);
        assert.equal(typeof response.body.message, 'string');
        const item = response.body.errors.find((e: any) => e.code === code);
        assert.ok(item, `expected an error item with code ${code}: ${response.text}`);
        if (param) assert.equal(item.param, param, response.text);
        assert.equal(await auditCount(ctx.api, token), before, 'a refused request wrote no audit trail');
        const unchanged = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
        assert.deepEqual(unchanged.body.gateway, gateway);
      });
    }
  }

  it("when another organisation's gateway is named then it is a 404, and with is_oem the OEM reaches its children", async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const sibling = await childOrganisation(ctx.api, adminToken);
    const childGateway = await createGateway(ctx.api, child.token, { tags: 'child' });
    const key = childGateway.gateway_key;
    const adminBefore = await auditCount(ctx.api, adminToken);
    const childBefore = await auditCount(ctx.api, child.token);

    const attempts = (extra: object) =>
      [
        ['GET', `/api/v3/gateway/${key}`, extra],
        ['GET', `/api/v3/gateway/${key}/configuration`, extra],
        ['PUT', `/api/v3/gateway/${key}`, { gateway: { name: 'taken over' }, ...extra }],
        ['POST', '/api/v3/gateway/register', { gateway_key: key, type: 'taken', ...extra }],
        ['POST', '/api/v3/gateways/register', { gateway: { gateway_key: key, gateway_type: 'taken' }, ...extra }],
        ['DELETE', `/api/v3/gateway/${key}`, extra],
      ] as const;
    for (const token of [adminToken, sibling.token]) {
      for (const [method, path, body] of attempts({})) {
        const response = await ctx.api.request(method, path, { token, body });
        assert.equal(response.status, 404, `${method} ${path}: ${response.text}`);
        assert.equal(response.body.errors[0].code, 'not_found');
      }
      const list = await ctx.api.request('GET', '/api/v3/gateway', { token, query: { per: 1000 } });
      assert.ok(!list.body.gateway.some((g: any) => g.gateway_key === key));
    }
    for (const [method, path, body] of attempts({ is_oem: true })) {
      const response = await ctx.api.request(method, path, { token: sibling.token, body });
      assert.equal(response.status, 403, `a non-OEM organisation cannot use is_oem: ${method} ${path}`);
    }
    const unchanged = await ctx.api.request('GET', `/api/v3/gateway/${key}`, { token: child.token });
    assert.deepEqual(unchanged.body.gateway, childGateway);
    assert.equal(await auditCount(ctx.api, child.token), childBefore);

    const withOem = await ctx.api.request('GET', '/api/v3/gateway', {
      token: adminToken,
      query: { per: 1000, is_oem: true },
    });
    assert.ok(withOem.body.gateway.some((g: any) => g.gateway_key === key));
    const one = await ctx.api.request('GET', `/api/v3/gateway/${key}`, { token: adminToken, query: { is_oem: true } });
    assert.deepEqual(one.body.gateway, childGateway);
    const configuration = await ctx.api.request('GET', `/api/v3/gateway/${key}/configuration`, {
      token: adminToken,
      query: { is_oem: true },
    });
    assert.deepEqual(fromDataUri(configuration.body.result), childGateway);
    const changed = await ctx.api.request('PUT', `/api/v3/gateway/${key}`, {
      token: adminToken,
      body: { is_oem: true, gateway: { name: 'renamed by OEM' } },
    });
    assert.equal(changed.status, 200, changed.text);
    const registered = await ctx.api.request('POST', '/api/v3/gateway/register', {
      token: adminToken,
      body: { is_oem: true, gateway_key: key, version: '7' },
    });
    assert.equal(registered.status, 200, registered.text);
    const removed = await ctx.api.request('DELETE', `/api/v3/gateway/${key}`, {
      token: adminToken,
      body: { is_oem: true },
    });
    assert.equal(removed.status, 200, removed.text);
    const audit = await auditOf(ctx.api, child.token, key);
    assert.deepEqual(
      audit.map((a) => [a.action_taken, a.user_name]),
      [
        ['create', child.email],
        ['update', 'admin@example.com'],
        ['update', 'admin@example.com'],
        ['delete', 'admin@example.com'],
      ],
    );
    assert.equal(await auditCount(ctx.api, adminToken), adminBefore, 'the changes are audited in the child');
  });

  it('when the OEM admin creates a gateway with child_organisation_key then it lives in that child', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const gateway = await createGateway(
      ctx.api,
      adminToken,
      {},
      { is_oem: true, child_organisation_key: child.organisationKey },
    );
    const seen = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token: child.token });
    assert.equal(seen.status, 200);
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token: adminToken })).status,
      404,
    );
    const unknownChild = await ctx.api.request('POST', '/api/v3/gateway', {
      token: adminToken,
      body: { is_oem: true, child_organisation_key: 'nosuchorgs', gateway: { name: 'x' } },
    });
    assert.equal(unknownChild.status, 400);
    assert.equal(unknownChild.body.errors[0].code, 'not_found');
    const notOem = await ctx.api.request('POST', '/api/v3/gateway', {
      token: child.token,
      body: { child_organisation_key: child.organisationKey, gateway: { name: 'x' } },
    });
    assert.equal(notOem.status, 403);
    const own = await createGateway(ctx.api, adminToken, {}, { is_oem: true });
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/gateway/${own.gateway_key}`, { token: adminToken })).status,
      200,
    );
  });

  it('when a user holds one gateway ability then exactly that operation is allowed and the rest are 403', async () => {
    const adminToken = await ctx.api.adminToken();
    const target = await createGateway(ctx.api, adminToken);
    const key = target.gateway_key;
    const requests = {
      read: [
        ['GET', '/api/v3/gateway', {}],
        ['GET', `/api/v3/gateway/${key}`, {}],
        ['GET', `/api/v3/gateway/${key}/configuration`, {}],
      ],
      create: [['POST', '/api/v3/gateway', { gateway: { name: unique('perm') } }]],
      update: [
        ['PUT', `/api/v3/gateway/${key}`, { gateway: { gateway_version: 'v' } }],
        ['POST', '/api/v3/gateway/register', { gateway_key: key, version: 'v' }],
        ['POST', '/api/v3/gateways/register', { gateway: { gateway_key: key, gateway_version: 'v' } }],
      ],
      delete: [['DELETE', `/api/v3/gateway/${key}`, {}]],
    } as const;
    const nobody = await userWithAbilities(ctx.api, adminToken, [11, 61]);
    const before = await auditCount(ctx.api, adminToken);
    for (const list of Object.values(requests)) {
      for (const [method, path, body] of list) {
        const response = await ctx.api.request(method, path, { token: nobody.token, body });
        assert.equal(response.status, 403, `${method} ${path}`);
        assert.equal(response.body.errors[0].code, 'forbidden');
      }
    }
    assert.equal(await auditCount(ctx.api, adminToken), before, 'refused requests write nothing');
    for (const [operation, ability] of [
      ['read', 81],
      ['create', 82],
      ['update', 83],
      ['delete', 84],
    ] as const) {
      const user = await userWithAbilities(ctx.api, adminToken, [ability]);
      const afterUser = await auditCount(ctx.api, adminToken);
      let writes = 0;
      for (const [other, list] of Object.entries(requests)) {
        if (other === operation) continue;
        for (const [method, path, body] of list) {
          const response = await ctx.api.request(method, path, { token: user.token, body });
          assert.equal(response.status, 403, `${ability}: ${method} ${path}`);
        }
      }
      for (const [method, path, body] of requests[operation]) {
        const response = await ctx.api.request(method, path, { token: user.token, body });
        assert.equal(response.status, 200, `${ability}: ${method} ${path}: ${response.text}`);
        if (method !== 'GET') writes++;
      }
      assert.equal(await auditCount(ctx.api, adminToken), afterUser + writes);
    }
  });

  it('when there is no token or a bad one then every gateway endpoint answers 401', async () => {
    await assertTokenRequired(ctx.api, [
      ['GET', '/api/v3/gateway'],
      ['GET', '/api/v3/gateway/abc'],
      ['GET', '/api/v3/gateway/abc/configuration'],
      ['POST', '/api/v3/gateway'],
      ['PUT', '/api/v3/gateway/abc'],
      ['DELETE', '/api/v3/gateway/abc'],
      ['POST', '/api/v3/gateway/register'],
      ['POST', '/api/v3/gateways/register'],
    ]);
  });

  it('when pretty is true then the answer is indented, and parameters may come in the query string', async () => {
    const token = await ctx.api.adminToken();
    const gateway = await createGateway(ctx.api, token);
    const pretty = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, {
      token,
      query: { pretty: true },
    });
    assert.ok(pretty.text.startsWith('{\n  "gateway": {\n    "gateway_key"'), pretty.text.slice(0, 60));
    const compact = await ctx.api.request('GET', `/api/v3/gateway/${gateway.gateway_key}`, { token });
    assert.ok(!compact.text.includes('\n'));
    const viaQuery = await ctx.api.request('POST', '/api/v3/gateway', {
      token,
      query: { gateway: JSON.stringify({ name: 'from the query', tags: 'q' }) },
    });
    assert.equal(viaQuery.status, 200, viaQuery.text);
    assert.equal(viaQuery.body.gateway.tags, 'q');
  });

  it('when the OpenAPI document is fetched then the gateway endpoints and sortable fields are in it', async () => {
    const response = await ctx.api.request('GET', '/openapi.json');
    for (const path of [
      '/api/v3/gateway',
      '/api/v3/gateway/{gateway_key}',
      '/api/v3/gateway/{gateway_key}/configuration',
      '/api/v3/gateway/register',
    ]) {
      assert.ok(response.body.paths[path], `${path} is documented`);
    }
    const orderBy = response.body.paths['/api/v3/gateway'].get.parameters.find((p: any) => p.name === 'order_by');
    assert.deepEqual(orderBy.schema.enum, ['created_at', 'updated_at', 'name', 'gateway_key']);
  });
});
