/**
 * Bad input of every class answers a 4xx in the contract's error shape, the same on both stores
 * (docs/api.md, "Bad input"): integers out of range and pages beyond any store.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import { unique } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

/** Asserts the contract's error body (CONTRACT 3) and answers its first item. */
function assertErrorShape(body: any, context: string): { code: string; message: string; param?: string } {
  assert.equal(body?.success, false, `${context}: ${JSON.stringify(body)}`);
  assert.equal(typeof body.message, 'string', context);
  assert.ok(Array.isArray(body.errors) && body.errors.length > 0, context);
  for (const item of body.errors) {
    assert.equal(typeof item.code, 'string', context);
    assert.equal(typeof item.message, 'string', context);
  }
  return body.errors[0];
}

const OUT_OF_RANGE_INTEGERS = [
  '99999999999999999999',
  '1e309',
  '9223372036854775807',
  '9007199254740993',
  '9007199254740992',
  '-9007199254740993',
];

describeOnStores(
  'bad input',
  (ctx) => {
    let token: string;
    let thingKey: string;
    let device: Device;
    let listOperations: { method: string; path: string }[];

    before(async () => {
      token = await ctx.api.adminToken();
      const keyPair = await createKeyPair(ctx.api, token);
      device = new Device(ctx.api.url, keyPair);
      thingKey = unique('bad');
      const registered = await device.post('/api/v3/things/register', { thing_key: thingKey });
      assert.equal(registered.status, 200, registered.text);
      const event = await device.post('/api/v3/things/event', { thing_key: thingKey, data: { temperature: 20 } });
      assert.equal(event.status, 200, event.text);
      // Every operation that pages, as the OpenAPI document lists them.
      const document = (await ctx.api.request('GET', '/openapi.json')).body;
      listOperations = [];
      for (const [path, item] of Object.entries<any>(document.paths)) {
        for (const [method, operation] of Object.entries<any>(item)) {
          const inQuery = (operation.parameters ?? []).some((p: any) => p.name === 'page');
          const inBody = operation.requestBody?.content?.['application/json']?.schema?.properties?.page;
          if (inQuery || inBody) {
            listOperations.push({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, thingKey) });
          }
        }
      }
      assert.ok(listOperations.length >= 15, `list operations found: ${listOperations.length}`);
    });

    it('when page or per is an integer beyond 2^53 (or not finite) on any list then it is a 400 naming it', async () => {
      for (const { method, path } of listOperations) {
        for (const name of ['page', 'per']) {
          for (const value of OUT_OF_RANGE_INTEGERS) {
            const context = `${method} ${path} ${name}=${value}`;
            const inQuery = method === 'GET' || method === 'DELETE';
            const response = await ctx.api.request(method, path, {
              token,
              ...(inQuery ? { query: { [name]: value } } : { body: { thing_key: thingKey, [name]: value } }),
            });
            assert.equal(response.status, 400, `${context}: ${response.text}`);
            assertErrorShape(response.body, context);
            // Some lists also require a parameter of their own (rule_key): the item for this one is there.
            const item = response.body.errors.find((e: { param?: string }) => e.param === name);
            assert.equal(item?.code, 'invalid', `${context}: ${response.text}`);
          }
        }
      }
    });

    it('when an out-of-range integer comes as a JSON number then it is a 400 too', async () => {
      for (const rawBody of ['{"page": 1e309}', '{"page": 99999999999999999999}', '{"per": -1e400}']) {
        const response = await ctx.api.request('GET', '/api/v3/roles', { token, rawBody });
        assert.equal(response.status, 400, `${rawBody}: ${response.text}`);
        assert.equal(assertErrorShape(response.body, rawBody).code, 'invalid');
      }
    });

    it('when the page is the largest safe integer then the page is empty and the total is still right', async () => {
      const first = await ctx.api.request('GET', '/api/v3/roles', { token });
      const last = await ctx.api.request('GET', '/api/v3/roles', {
        token,
        query: { page: String(Number.MAX_SAFE_INTEGER), per: 1000 },
      });
      assert.equal(last.status, 200, last.text);
      assert.deepEqual(last.body, { total_count: first.body.total_count, page: Number.MAX_SAFE_INTEGER, roles: [] });
      const data = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: thingKey, page: Number.MAX_SAFE_INTEGER, per: 10_000 },
      });
      assert.equal(data.status, 200, data.text);
      assert.equal(data.body[thingKey].total_event_count, 1);
      assert.deepEqual(data.body[thingKey].event_data, []);
    });

    it('after all of it the server still answers', async () => {
      assert.equal((await ctx.api.request('GET', '/healthz')).status, 200);
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);
