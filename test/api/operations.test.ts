import assert from 'node:assert/strict';
import { it } from 'node:test';
import { request } from 'undici';
import { createServer } from '../../src/app.ts';
import { loadConfig } from '../../src/core/config.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createThing, storedEventCount, unique } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { SocketClient, StreamClient } from '../support/realtime.ts';
import { startServer } from '../support/server.ts';
import { storeEnv } from '../support/stores.ts';
import { describeOnStores } from '../support/suites.ts';

/** The value of one sample of a Prometheus text answer, or undefined when it is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => given[k] === v)) return Number(match[3]);
  }
  return undefined;
}

async function scrape(url: string, headers: Record<string, string> = {}) {
  const response = await request(`${url}/metrics`, { headers });
  return {
    status: response.statusCode,
    type: String(response.headers['content-type']),
    text: await response.body.text(),
  };
}

describeOnStores('operations endpoints', (ctx) => {
  it('when scraped then /metrics answers the Prometheus families, counting what the server did', async () => {
    const token = await ctx.api.adminToken();
    const before = await scrape(ctx.api.url);
    assert.equal(before.status, 200);
    assert.match(before.type, /^text\/plain/);
    for (const family of [
      'thingbase_events_stored_total',
      'thingbase_event_writer_pending_rows',
      'thingbase_event_writer_refusals_total',
      'thingbase_http_requests_total',
      'thingbase_http_request_duration_seconds',
      'thingbase_mqtt_connections',
      'thingbase_mqtt_external_messages',
      'thingbase_deliveries_total',
      'thingbase_delivery_queue_depth',
      'thingbase_rule_firings_total',
      'thingbase_realtime_subscribers',
      'process_cpu_user_seconds_total',
    ]) {
      assert.match(before.text, new RegExp(`^# TYPE ${family} `, 'm'), family);
    }
    const httpBefore = sample(before.text, 'thingbase_events_stored_total', { transport: 'http' }) ?? 0;
    const apiBefore = sample(before.text, 'thingbase_events_stored_total', { transport: 'api' }) ?? 0;
    const firedBefore = sample(before.text, 'thingbase_rule_firings_total') ?? 0;

    const device = new Device(ctx.api.url, await createKeyPair(ctx.api, token));
    const thingKey = unique('meter');
    assert.equal((await device.register({ thing_key: thingKey })).status, 200);
    assert.equal(
      (await device.event({ events: [1, 2, 3].map((v) => ({ thing_key: thingKey, data: { v } })) })).status,
      200,
    );
    const thing = await createThing(ctx.api, token, {});
    const rule = await ctx.api.request('POST', '/api/v3/rules', {
      token,
      body: { rule: { name: unique('rule'), condition: 'v > 5', thing_keys: [thing.thing_key], alert_type: 1 } },
    });
    assert.equal(rule.status, 200, rule.text);
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [{ data: { v: 10 } }, { data: { v: 1 } }] },
    });
    assert.equal(posted.status, 200, posted.text);
    assert.equal((await ctx.api.request('GET', `/api/v3/things/${thing.thing_key}`, { token })).status, 200);
    assert.equal((await ctx.api.request('GET', '/api/v3/things/no-such-thing', { token })).status, 404);
    assert.equal((await ctx.api.request('GET', `/console/things/${thing.thing_key}`)).status, 200);
    assert.equal((await ctx.api.request('GET', '/no/such/path')).status, 404);
    const client = await SocketClient.open(ctx.api.url, token);
    await client.subscribe('a', 'alerts');
    await client.subscribe('b', 'events');

    const after = (await scrape(ctx.api.url)).text;
    assert.equal(sample(after, 'thingbase_events_stored_total', { transport: 'http' }), httpBefore + 3);
    assert.equal(sample(after, 'thingbase_events_stored_total', { transport: 'api' }), apiBefore + 2);
    assert.equal(sample(after, 'thingbase_rule_firings_total'), firedBefore + 1);
    assert.equal(sample(after, 'thingbase_realtime_subscribers'), 2);
    assert.equal(sample(after, 'thingbase_event_writer_pending_rows'), 0);
    const route = '/api/v3/things/:thing_key';
    assert.ok((sample(after, 'thingbase_http_requests_total', { method: 'GET', route, status: '200' }) ?? 0) >= 1);
    assert.ok((sample(after, 'thingbase_http_requests_total', { method: 'GET', route, status: '404' }) ?? 0) >= 1);
    assert.ok(
      (sample(after, 'thingbase_http_request_duration_seconds_count', { method: 'GET', route }) ?? 0) >= 2,
      'timed by route template, not by path',
    );
    assert.doesNotMatch(after, /no-such-thing/);
    const pages = { method: 'GET', route: '/console/*', status: '200' };
    assert.ok((sample(after, 'thingbase_http_requests_total', pages) ?? 0) >= 1, "the console's pages under one route");
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    assert.ok((sample(after, 'thingbase_http_requests_total', unmatched) ?? 0) >= 1, 'paths no route serves');
    assert.doesNotMatch(after, new RegExp(thing.thing_key), 'no path in a label');
    client.close();
  });

  it('when events arrive already expired then the stored events counter leaves them out', async () => {
    const org = await childOrganisation(ctx.api, await ctx.api.adminToken());
    const thing = await createThing(ctx.api, org.token, {});
    const retention = await ctx.api.request('PUT', `/api/v3/organisations/${org.organisationKey}`, {
      token: org.token,
      body: { organisation: { retention_days: 1 } },
    });
    assert.equal(retention.status, 200, retention.text);
    const apiBefore = sample((await scrape(ctx.api.url)).text, 'thingbase_events_stored_total', { transport: 'api' });
    const old = Math.floor(Date.now() / 1000) - 5 * 86_400;
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token: org.token,
      body: { events: [...[1, 2, 3].map((v) => ({ timestamp: old - v, data: { v } })), { data: { v: 4 } }] },
    });
    assert.equal(posted.status, 200, posted.text);
    assert.equal(await storedEventCount(ctx.api, thing.thing_key), 1, 'only the recent event is stored');
    const apiAfter = sample((await scrape(ctx.api.url)).text, 'thingbase_events_stored_total', { transport: 'api' });
    assert.equal(apiAfter, (apiBefore ?? 0) + 1);
  });

  it('when a request carries an X-Request-Id then the answer echoes it; else the answer has a new one', async () => {
    const given = await ctx.api.request('GET', '/api/v3/things', { headers: { 'x-request-id': 'trace-42.a:b' } });
    assert.equal(given.status, 401);
    assert.equal(given.headers['x-request-id'], 'trace-42.a:b');
    const none = await ctx.api.request('GET', '/healthz');
    assert.match(String(none.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const odd = await ctx.api.request('GET', '/healthz', { headers: { 'x-request-id': 'no spaces {allowed}' } });
    assert.match(String(odd.headers['x-request-id']), /^[0-9a-f-]{36}$/, 'an id it could not log safely is replaced');
    const again = await ctx.api.request('GET', '/healthz');
    assert.notEqual(again.headers['x-request-id'], none.headers['x-request-id']);
  });

  it('when asked whether it is ready then /readyz answers 200 while the store answers and the writer takes events', async () => {
    const ready = await ctx.api.request('GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
  });

  it('when the first admin is not made yet then /readyz is a 503 naming bootstrap, and ready once it is, when sign-in works at once', async () => {
    const settings = ctx.store.fresh();
    const server = await createServer(
      loadConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        MQTT_PORT: '0',
        LOG_LEVEL: 'error',
        THINGBASE_ADMIN_EMAIL: 'first@example.com',
        THINGBASE_ADMIN_PASSWORD: 'first admin password',
        THINGBASE_PASSWORD_HASH_COST: '1024',
        ...storeEnv(settings),
      }),
    );
    try {
      // Before listen: the store answers, but nobody could sign in yet.
      const early = await server.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(early.statusCode, 503, early.body);
      assert.deepEqual(JSON.parse(early.body), {
        status: 'not_ready',
        reasons: ['bootstrap: the first organisation and admin are not made yet'],
      });
      const address = await server.listen({ port: 0, host: '127.0.0.1' });
      const ready = await call(address, 'GET', '/readyz');
      assert.equal(ready.status, 200, ready.text);
      const signIn = await call(address, 'POST', '/api_sign_in', {
        body: { email: 'first@example.com', password: 'first admin password' },
      });
      assert.equal(signIn.status, 200, signIn.text);
    } finally {
      await server.close();
      await ctx.store.dispose(settings);
    }
  });

  it('when the store no longer answers then /readyz is a 503 naming why', async () => {
    const other = await startServer(ctx.store);
    await other.server.store.close();
    const answer = await other.request('GET', '/readyz');
    assert.equal(answer.status, 503);
    assert.equal(answer.body.status, 'not_ready');
    assert.match(answer.body.reasons.join(' '), /store/);
    await other.server.app.close();
  });
});

describeOnStores(
  'operations endpoints with METRICS_TOKEN',
  (ctx) => {
    it('when METRICS_TOKEN is set then /metrics needs it as a bearer token, in the error shape otherwise', async () => {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: 'metrics secret' },
      ];
      for (const headers of attempts) {
        const refused = await scrape(ctx.api.url, headers);
        assert.equal(refused.status, 401);
        const body = JSON.parse(refused.text);
        assert.equal(body.success, false);
        assert.equal(body.errors[0].code, 'unauthorized');
      }
      const allowed = await scrape(ctx.api.url, { authorization: 'Bearer metrics secret' });
      assert.equal(allowed.status, 200);
      assert.match(allowed.text, /thingbase_events_stored_total/);
    });
  },
  { env: { METRICS_TOKEN: 'metrics secret' } },
);

describeOnStores('access logs', (ctx) => {
  it('when LOG_REQUESTS is set then each answer is logged with its id, route and status, and a token parameter never', async () => {
    const server = await serveProcess({
      DATABASE_URL: ctx.api.storeSettings.databaseUrl,
      ...(ctx.api.storeSettings.databaseSchema ? { DATABASE_SCHEMA: ctx.api.storeSettings.databaseSchema } : {}),
      LOG_LEVEL: 'info',
      LOG_REQUESTS: 'true',
    });
    try {
      const token = await ctx.api.adminToken();
      const answered = await request(`${server.url}/api/v3/things`, {
        headers: { 'x-auth-token': token, 'x-request-id': 'access-log-test' },
      });
      await answered.body.text();
      const stream = await StreamClient.open(server.url, { topic: 'events', token });
      assert.equal(stream.status, 200);
      stream.close();
      const refused = await StreamClient.open(server.url, { topic: 'weather', token });
      assert.equal(refused.status, 400);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const lines = server
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"request"'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const things = lines.find((l) => l.reqId === 'access-log-test');
      assert.ok(things, server.output());
      assert.equal(things.method, 'GET');
      assert.equal(things.url, '/api/v3/things');
      assert.equal(things.status, 200);
      assert.equal(typeof things.ms, 'number');
      assert.ok(
        lines.some((l) => String(l.url).startsWith('/api/v3/stream?')),
        'the streams are logged',
      );
      assert.ok(!server.output().includes(token), 'the token is in no log line');
      assert.match(server.output(), /token=\[redacted\]/);
    } finally {
      await stopProcess(server.child);
    }
  });
});
