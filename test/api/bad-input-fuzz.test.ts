/**
 * A property over the server's own OpenAPI document: every operation, sent junk (wrong types, huge
 * numbers, unicode, NUL characters, nested junk, nulls, wrong content types, `../` and `%00` in path
 * keys), answers below 500, and every 4xx carries the error body (docs/api.md, "Errors" and "Bad input").
 * The operations' own schemas guide the junk, so much of it gets past the parameter check into the
 * handlers, signed by a key pair where the operation is a device's.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { call } from '../support/http.ts';
import { hugeNumberText, junkJson, junkNumber, junkText, type Schema, valueFor } from '../support/junk.ts';
import { describeOnStores } from '../support/suites.ts';

/**
 * Runs per operation: about 80 operations, so a few thousand requests per store. A deeper search:
 * `FUZZ_RUNS_PER_OPERATION=500 node --import tsx --test test/api/bad-input-fuzz.test.ts`.
 */
const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS_PER_OPERATION ?? 12);

interface Operation {
  method: string;
  path: string;
  pathNames: string[];
  query: { name: string; schema: Schema }[];
  body: Schema | undefined;
  device: boolean;
  signOut: boolean;
}

function operationsOf(document: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const parameters: any[] = operation.parameters ?? [];
      operations.push({
        method: method.toUpperCase(),
        path,
        pathNames: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: operation.requestBody?.content?.['application/json']?.schema,
        device: (operation.security ?? []).some((s: object) => 'accessKey' in s),
        signOut: path === '/api_sign_out',
      });
    }
  }
  return operations;
}

/** A body as raw text: the schema's shape with junk, any JSON, raw huge numbers, or no JSON at all. */
function bodyFor(schema: Schema | undefined): fc.Arbitrary<string | undefined> {
  const names = Object.keys(schema?.properties ?? {});
  return fc.oneof(
    { weight: 4, arbitrary: valueFor(schema).map((value) => JSON.stringify(value)) },
    junkJson.map((value) => JSON.stringify(value)),
    fc
      .tuple(fc.constantFrom(...(names.length > 0 ? names : ['page'])), hugeNumberText)
      .map(([name, number]) => `{"${name}": ${number}}`),
    fc.constantFrom(undefined, '', 'nonsense', '{', '[1,2]', '"text"', 'null', '{"a":"\\u0000"}'),
  );
}

/** The text percent-encoded; a lone surrogate, which has no UTF-8, as the bytes a CESU encoder writes. */
function percentEncoded(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return `%ED%A0%80${encodeURIComponent(text.replace(/[\ud800-\udfff]/g, ''))}`;
  }
}

const pathSegment = fc.oneof(
  fc.constantFrom('abc1234567', '..', '%2e%2e', '..%2F..%2Fetc', '%00', 'a%00b', '%zz', '%', 'k'.repeat(300)),
  junkText.map((text) => percentEncoded(text).slice(0, 400)),
);

const queryValue = fc.oneof(junkText, junkNumber.map(String), fc.boolean().map(String));

const contentType = fc.constantFrom(
  'application/json',
  'application/json',
  'text/plain',
  '',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  ';;;',
  'application/json; charset=latin1',
);

interface Junk {
  segments: string[];
  query: [string, string][];
  body: string | undefined;
  contentType: string;
}

function junkFor(operation: Operation): fc.Arbitrary<Junk> {
  const queryNames = operation.query.map((q) => q.name);
  return fc.record({
    segments: fc.array(pathSegment, {
      minLength: operation.pathNames.length,
      maxLength: operation.pathNames.length,
    }),
    query: fc.array(fc.tuple(fc.constantFrom(...queryNames, 'page', 'per', 'x\u0000'), queryValue), {
      maxLength: 4,
    }),
    body: bodyFor(operation.body),
    contentType,
  });
}

describeOnStores('bad input: every operation of the OpenAPI document, sent junk', (ctx) => {
  let operations: Operation[];
  let token: string;
  let keyPair: KeyPair;

  before(async () => {
    token = await ctx.api.adminToken();
    keyPair = await createKeyPair(ctx.api, token);
    operations = operationsOf((await ctx.api.request('GET', '/openapi.json')).body);
    assert.ok(operations.length > 50, `operations found: ${operations.length}`);
  });

  async function send(operation: Operation, junk: Junk) {
    let index = 0;
    const path = operation.path.replace(/\{[^}]+\}/g, () => junk.segments[index++] ?? 'x');
    const query = new URLSearchParams(junk.query).toString();
    const headers: Record<string, string> = { 'content-type': junk.contentType };
    if (operation.device) {
      headers['x-access-key'] = keyPair.access_key;
      headers['x-dtn-signature'] = sign(keyPair.secret_key, junk.body ?? '');
    }
    // Signing out with the suite's token would end it for the operations after.
    const caller = operation.signOut || operation.device ? undefined : token;
    return call(ctx.api.url, operation.method, query === '' ? path : `${path}?${query}`, {
      token: caller,
      headers,
      ...(junk.body === undefined ? {} : { rawBody: junk.body }),
    });
  }

  it('when any operation is sent junk then it answers below 500, every 4xx in the error shape', async (t) => {
    for (const operation of operations) {
      await t.test(`${operation.method} ${operation.path}`, async () => {
        await fc.assert(
          fc.asyncProperty(junkFor(operation), async (junk) => {
            const response = await send(operation, junk);
            const context = `${response.status} ${response.text.slice(0, 300)}`;
            assert.ok(response.status < 500, context);
            if (response.status >= 400) {
              assert.equal(response.body?.success, false, context);
              assert.equal(typeof response.body.message, 'string', context);
              assert.ok(Array.isArray(response.body.errors) && response.body.errors.length > 0, context);
              for (const item of response.body.errors) {
                assert.equal(typeof item.code, 'string', context);
                assert.equal(typeof item.message, 'string', context);
              }
            }
          }),
          { numRuns: RUNS_PER_OPERATION },
        );
      });
    }
    assert.equal((await ctx.api.request('GET', '/healthz')).status, 200);
  });
});
