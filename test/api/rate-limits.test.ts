import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import type { ApiResponse } from '../support/http.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

const LIMIT = 40;

/** Waits for the next one-minute window when fewer than `seconds` are left of this one. */
async function awayFromWindowEnd(api: TestServer, token: string, seconds = 12) {
  const probe = await api.request('GET', '/api/v3/thing_templates', { token });
  const reset = Number(probe.headers['ratelimit-reset']);
  if (reset < seconds) await sleep(reset * 1000 + 300);
}

/** Requests until one is refused; answers the refusal and how many were accepted first. */
async function exhaust(api: TestServer, token: string): Promise<{ refused: ApiResponse; accepted: number }> {
  for (let accepted = 0; accepted <= LIMIT * 2; accepted++) {
    const response = await api.request('GET', '/api/v3/thing_templates', { token });
    if (response.status === 429) return { refused: response, accepted };
    assert.equal(response.status, 200, response.text);
  }
  throw new Error('never refused');
}

const windowStart = () => Date.now() - (Date.now() % 60_000);

describeOnStores(
  'API rate limits',
  (ctx) => {
    it('when a user calls the API then every answer carries RateLimit headers, and sign-in and devices are not counted', async () => {
      const token = await ctx.api.adminToken();
      await awayFromWindowEnd(ctx.api, token);
      const first = await ctx.api.request('GET', '/api/v3/things', { token });
      assert.equal(first.headers['ratelimit-limit'], String(LIMIT));
      const remaining = Number(first.headers['ratelimit-remaining']);
      const reset = Number(first.headers['ratelimit-reset']);
      assert.ok(remaining >= 0 && remaining < LIMIT, first.text);
      assert.ok(reset >= 1 && reset <= 60, String(reset));
      const signIn = await ctx.api.request('POST', '/api_sign_in', {
        body: { email: 'admin@example.com', password: 'correct horse battery' },
      });
      assert.equal(signIn.status, 200);
      assert.equal(signIn.headers['ratelimit-limit'], undefined);
      const pair = await createKeyPair(ctx.api, token);
      const device = new Device(ctx.api.url, pair);
      const registered = await device.register({ thing_key: unique('counted') });
      assert.equal(registered.status, 200, registered.text);
      assert.equal(registered.headers['ratelimit-limit'], undefined);
      const notFound = await ctx.api.request('GET', '/api/v3/things/no-such-thing', { token });
      assert.equal(notFound.status, 404);
      assert.equal(
        Number(notFound.headers['ratelimit-remaining']),
        remaining - 2,
        'the key pair was one request; sign-in and the device none',
      );
    });

    it('when an organisation makes more requests than its limit then it gets 429 with Retry-After and nothing is done; other organisations go on', async () => {
      const admin = await ctx.api.adminToken();
      await awayFromWindowEnd(ctx.api, admin, 20);
      const child = await childOrganisation(ctx.api, admin);
      const pair = await createKeyPair(ctx.api, child.token);
      const device = new Device(ctx.api.url, pair);
      const thingKey = unique('limited');
      assert.equal((await device.register({ thing_key: thingKey })).status, 200);
      const { refused, accepted } = await exhaust(ctx.api, child.token);
      assert.ok(accepted < LIMIT, `accepted ${accepted}`);
      assert.equal(refused.body.success, false);
      assert.equal(refused.body.errors[0].code, 'rate_limited');
      assert.match(refused.body.message, /40 API requests/);
      assert.equal(refused.headers['ratelimit-remaining'], '0');
      assert.equal(refused.headers['retry-after'], refused.headers['ratelimit-reset']);
      const name = unique('never');
      const create = await ctx.api.request('POST', '/api/v3/things', {
        token: child.token,
        body: { thing: { name, thing_template_key: 'whatever' } },
      });
      assert.equal(create.status, 429);
      const stored = await ctx.api.server.store.db
        .selectFrom('things')
        .select('name')
        .where('name', '=', name)
        .execute();
      assert.deepEqual(stored, [], 'a refused request is not applied');
      assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: admin })).status, 200);
      assert.equal((await device.event({ thing_key: thingKey, data: { v: 1 } })).status, 200, 'devices go on');
      assert.ok((await ctx.api.signIn(child.email, child.password)).length > 0, 'sign-in goes on');
    });

    it('when a leaked key spends the limit then its deletion and a sign-out still work', async () => {
      const admin = await ctx.api.adminToken();
      await awayFromWindowEnd(ctx.api, admin, 20);
      const child = await childOrganisation(ctx.api, admin);
      const created = await ctx.api.request('POST', '/api/v3/api_keys', {
        token: child.token,
        body: { api_key: { name: unique('leaked') } },
      });
      assert.equal(created.status, 200, created.text);
      const { api_key_key: key, token: leaked } = created.body.api_key;
      await exhaust(ctx.api, leaked);
      assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: child.token })).status, 429);
      const deleted = await ctx.api.request('DELETE', `/api/v3/api_keys/${key}`, { token: child.token });
      assert.equal(deleted.status, 200, deleted.text);
      assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: leaked })).status, 401, 'the key is gone');
      const signedOut = await ctx.api.request('DELETE', '/api_sign_out', { token: child.token });
      assert.equal(signedOut.status, 200, signedOut.text);
      assert.equal((await ctx.api.request('GET', '/api/v3/things', { token: child.token })).status, 401, 'signed out');
    });

    it('when a request is refused for another reason then it still carries the RateLimit headers', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const reader = await userWithAbilities(ctx.api, child.token, [11]);
      const refused = await ctx.api.request('POST', '/api/v3/roles', {
        token: reader.token,
        body: { role: { name: 'x', abilities: [11] } },
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.headers['ratelimit-limit'], String(LIMIT));
      assert.ok(Number(refused.headers['ratelimit-remaining']) < LIMIT);
    });

    it('when two servers share a PostgreSQL store then the limit is counted across both', {
      skip: ctx.store.name === 'postgres' ? false : 'one server per SQLite store',
    }, async () => {
      const other = await startServer(ctx.store, {
        storeSettings: ctx.api.storeSettings,
        env: { API_RATE_LIMIT: '20' },
      });
      const first = await startServer(ctx.store, {
        storeSettings: ctx.api.storeSettings,
        env: { API_RATE_LIMIT: '20' },
      });
      try {
        const admin = await ctx.api.adminToken();
        await awayFromWindowEnd(ctx.api, admin, 25);
        const child = await childOrganisation(ctx.api, admin);
        const start = windowStart();
        const counted = async () => {
          const row = await ctx.api.server.store.db
            .selectFrom('api_request_windows')
            .select('requests')
            .where('organisation_key', '=', child.organisationKey)
            .where('window_start', '=', start)
            .executeTakeFirst();
          return Number(row?.requests ?? 0);
        };
        // The requests that made the child organisation are stored by their server within a second.
        await sleep(1200);
        for (let i = await counted(); i < 15; i++) {
          assert.equal((await first.request('GET', '/api/v3/things', { token: child.token })).status, 200);
        }
        const deadline = Date.now() + 5000;
        while ((await counted()) < 15 && Date.now() < deadline) await sleep(50);
        assert.equal(await counted(), 15, 'the first server stored its count');
        let accepted = 0;
        let response = await other.request('GET', '/api/v3/things', { token: child.token });
        assert.equal(response.headers['ratelimit-remaining'], '4', 'the other server counts the first one’s requests');
        while (response.status === 200) {
          accepted++;
          response = await other.request('GET', '/api/v3/things', { token: child.token });
        }
        assert.equal(accepted, 5);
        assert.equal(response.status, 429);
        await sleep(1100);
        const back = await first.request('GET', '/api/v3/things', { token: child.token });
        assert.equal(back.status, 429, 'the first server learns of the other one’s requests within a second');
      } finally {
        await first.close();
        await other.close();
      }
    });
  },
  { env: { API_RATE_LIMIT: String(LIMIT) } },
);

describeOnStores('usage', (ctx) => {
  it("when an organisation stores events and calls the API then GET /api/v3/usage answers its figures, and no other organisation's", async () => {
    const admin = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, admin);
    const empty = await ctx.api.request('GET', '/api/v3/usage', { token: child.token });
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(Object.keys(empty.body.usage).sort(), [
      'api_requests_today',
      'events_limited_today',
      'events_per_second_limit',
      'events_per_second_limit_source',
      'events_per_second_per_key_pair_limit',
      'events_stored_this_month',
      'events_stored_today',
      'storage_bytes',
      'things',
    ]);
    // No limit of its own, and none on the server (EVENTS_PER_SECOND_PER_ORGANISATION is 0 by default).
    assert.equal(empty.body.usage.events_per_second_limit, 0);
    assert.equal(empty.body.usage.events_per_second_limit_source, 'server_default');
    assert.equal(
      empty.body.usage.events_per_second_per_key_pair_limit,
      0,
      'EVENTS_PER_SECOND_PER_KEY_PAIR is 0 by default',
    );
    assert.equal(empty.body.usage.things, 0);
    assert.equal(empty.body.usage.events_stored_today, 0);
    assert.equal(empty.body.usage.storage_bytes, 0);
    const pair = await createKeyPair(ctx.api, child.token);
    const device = new Device(ctx.api.url, pair);
    const [a, b] = [unique('usage'), unique('usage')];
    await device.register({ thing_key: a });
    await createThing(ctx.api, child.token, { thing_key: b });
    for (let i = 0; i < 3; i++) {
      assert.equal((await device.event({ thing_key: a, data: { temperature: 20 + i } })).status, 200);
    }
    const bulk = await device.event({
      events: [
        { thing_key: a, data: { temperature: 30 } },
        { thing_key: b, data: { temperature: 31 } },
      ],
    });
    assert.equal(bulk.status, 200, bulk.text);
    assert.equal((await device.heartbeat({ thing_key: a })).status, 200);
    const usage = (await ctx.api.request('GET', '/api/v3/usage', { token: child.token })).body.usage;
    assert.equal(usage.things, 2);
    assert.equal(usage.events_stored_today, 5);
    assert.equal(usage.events_stored_this_month, 5);
    assert.ok(usage.storage_bytes > 2 * 1024, String(usage.storage_bytes));
    // The first usage call, the key pair, the thing (and its template lookup) and this call.
    assert.ok(usage.api_requests_today >= 4, String(usage.api_requests_today));
    const adminUsage = (await ctx.api.request('GET', '/api/v3/usage', { token: admin })).body.usage;
    assert.ok(adminUsage.api_requests_today > 0);
    const stored = await ctx.api.server.store.db
      .selectFrom('event_days')
      .select('events')
      .where('organisation_key', '=', child.organisationKey)
      .execute();
    assert.deepEqual(
      stored.map((r) => Number(r.events)),
      [5],
    );
    const again = (await ctx.api.request('GET', '/api/v3/usage', { token: child.token })).body.usage;
    assert.equal(again.api_requests_today, usage.api_requests_today + 1);
  });

  it('when the API description is read then user operations document the 429, and device ones and the uncounted ones do not', async () => {
    const document = (await ctx.api.request('GET', '/openapi.json')).body;
    const usage = document.paths['/api/v3/usage'].get;
    assert.equal(usage.responses['429'].headers['Retry-After'].schema.type, 'integer');
    assert.match(document.components.securitySchemes.authToken.description, /RateLimit-Remaining/);
    assert.equal(document.paths['/api/v3/things/event'].post.responses['429'], undefined);
    assert.equal(document.paths['/api_sign_in'].post.responses['429'], undefined);
    // Not counted against the limit (sign-out, an API key's deletion): never a 429.
    const signOut = document.paths['/api_sign_out'].delete;
    assert.deepEqual([signOut.responses['429'], signOut.responses['401'] !== undefined], [undefined, true]);
    const keyDelete = document.paths['/api/v3/api_keys/{api_key_key}'].delete;
    assert.deepEqual([keyDelete.responses['429'], keyDelete.responses['403'] !== undefined], [undefined, true]);
    assert.equal(keyDelete['x-rate-limit-exempt'], undefined, 'the marker is not left in the document');
  });

  it('when the caller may not read things then usage is a 403', async () => {
    const admin = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, admin, [21]);
    assert.equal((await ctx.api.request('GET', '/api/v3/usage', { token: user.token })).status, 403);
    assert.equal((await ctx.api.request('GET', '/api/v3/usage')).status, 401);
  });
});
