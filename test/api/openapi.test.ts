/**
 * The OpenAPI document (docs/api.md, "The API description"): every operation has an operation id, an
 * example that its own schema accepts, and its error answers in the error shape; resources are
 * component schemas; and the example of every read that names no key of the reader's data succeeds
 * when run as it is, as /docs "Try it out" runs it.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parameterSchema } from '../../src/openapi/document.ts';
import { describeOnStores } from '../support/suites.ts';

type Json = Record<string, any>;

const METHODS = ['get', 'post', 'put', 'delete'];

describeOnStores('the OpenAPI document', (ctx) => {
  let document: Json;
  const operations = () => {
    const found: { path: string; method: string; operation: Json }[] = [];
    for (const [path, item] of Object.entries<Json>(document.paths)) {
      for (const method of METHODS) if (item[method]) found.push({ path, method, operation: item[method] });
    }
    return found;
  };
  const exampleOf = (operation: Json): Json => {
    const body = operation.requestBody?.content?.['application/json']?.example;
    if (body) return body;
    return Object.fromEntries(
      (operation.parameters ?? []).filter((p: Json) => p.example !== undefined).map((p: Json) => [p.name, p.example]),
    );
  };

  it('when /openapi.json is read then every operation has its own operation id, an example and its error answers', async () => {
    const answer = await ctx.api.request('GET', '/openapi.json', { headers: { 'content-type': '' } });
    assert.equal(answer.status, 200);
    document = answer.body;
    const ids = new Set<string>();
    const all = operations();
    assert.ok(all.length > 80, `${all.length} operations`);
    for (const { path, method, operation } of all) {
      const name = `${method.toUpperCase()} ${path}`;
      assert.match(operation.operationId ?? '', /^[a-z]+[A-Za-z0-9]*$/, name);
      assert.ok(!ids.has(operation.operationId), `${name}: ${operation.operationId} is used twice`);
      ids.add(operation.operationId);
      // An operation that takes no parameter at all (the WebSocket upgrade) has nothing to show.
      const takesParameters = operation.requestBody || operation.parameters?.length;
      if (takesParameters) assert.ok(Object.keys(exampleOf(operation)).length > 0, `${name} has an example`);
      const errors = [
        '400',
        ...(operation.security?.length ? ['401', '403'] : []),
        ...(path.includes('{') ? ['404'] : []),
      ];
      for (const status of errors) {
        assert.deepEqual(
          operation.responses[status]?.content?.['application/json']?.schema,
          { $ref: '#/components/schemas/Error' },
          `${name} documents ${status}`,
        );
      }
    }
    assert.equal(ids.has('getThingsByThingKey') && ids.has('postQueryThingData'), true);
    for (const resource of ['Error', 'Thing', 'Alert', 'Rule', 'KeyPair', 'User', 'Role']) {
      assert.ok(document.components.schemas[resource], `component ${resource}`);
    }
    assert.deepEqual(
      document.paths['/api/v3/things'].get.responses['200'].content['application/json'].schema.properties.things.items,
      { $ref: '#/components/schemas/Thing' },
      'lists refer to the resource component',
    );
  });

  it('when each example is checked against its operation schema then every one is valid, and so is the error example', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ $id: 'document', components: document.components });
    for (const { path, method, operation } of operations()) {
      const validate = ajv.compile(parameterSchema(operation));
      const example = exampleOf(operation);
      assert.ok(
        validate(example),
        `${method.toUpperCase()} ${path} example ${JSON.stringify(example)}: ${ajv.errorsText(validate.errors)}`,
      );
    }
    const error = document.components.schemas.Error;
    assert.ok(ajv.validate(error, error.example), ajv.errorsText(ajv.errors));
  });

  it('when the example of a read is run as it is then it succeeds (thing_data included)', async () => {
    const token = await ctx.api.adminToken();
    const reads = operations().filter(
      ({ path, method, operation }) =>
        (method === 'get' || operation.operationId.startsWith('postQuery')) &&
        !path.includes('{') &&
        // Streams that stay open: realtime push (WebSocket and Server-Sent Events) and MQTT over WebSocket.
        !['getWs', 'getStream', 'getMqtt'].includes(operation.operationId) &&
        // A read that needs a key of the reader's data cannot succeed with a made-up one.
        !(operation.parameters ?? []).some((p: Json) => p.required && /_keys?$/.test(p.name)),
    );
    assert.ok(reads.length >= 12, `${reads.length} reads`);
    for (const { path, method, operation } of reads) {
      const example = exampleOf(operation);
      const answer =
        method === 'get'
          ? await ctx.api.request('GET', path, {
              token,
              headers: { 'content-type': '' },
              query: Object.fromEntries(
                Object.entries(example).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : (v as string)]),
              ),
            })
          : await ctx.api.request('POST', path, { token, body: example });
      assert.equal(
        answer.status,
        200,
        `${method.toUpperCase()} ${path} with ${JSON.stringify(example)}: ${answer.text}`,
      );
    }
  });
});
