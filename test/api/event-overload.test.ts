import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { it } from 'node:test';
import pg from 'pg';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing } from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

const MAX_PENDING = 20;

/** Sends only the headers of a request that announces a large body, and waits for the answer. */
function headersOnly(
  url: string,
  path: string,
  token: string,
): Promise<{ status: number; headers: object; body: any }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(new URL(path, url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '5000000', 'x-auth-token': token },
    });
    request.on('response', (response) => {
      let text = '';
      response.on('data', (chunk) => {
        text += chunk;
      });
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: JSON.parse(text) });
      });
    });
    request.on('error', reject);
    request.setTimeout(10_000, () => {
      request.destroy();
      reject(new Error('no answer while the body was not sent'));
    });
    request.flushHeaders();
  });
}

/** Waits until a transaction of another connection waits for a row lock `locker` holds. */
async function untilBlockedBy(locker: pg.Client): Promise<void> {
  for (let tries = 0; ; tries++) {
    const waiting = await locker.query(
      'select count(*)::int as n from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))',
    );
    if (waiting.rows[0].n > 0) return;
    if (tries > 200) throw new Error('the writer never waited for the lock');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const POSTGRES_ONLY = (store: string) =>
  store === 'sqlite' ? 'holding a SQLite write lock from another connection would stop this process' : false;

describeOnStores(
  'event ingestion under overload',
  (ctx) => {
    it('when the writer holds as many events as it may then an event request is refused with 503 and Retry-After before its body is read, and the events held are stored', {
      skip: POSTGRES_ONLY(ctx.store.name),
    }, async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const device = await MqttDevice.connect(
        `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`,
        await createKeyPair(ctx.api, token),
      );
      const events = Array.from({ length: MAX_PENDING }, (_, i) => ({ data: { seq: i } }));
      const locker = new pg.Client({ connectionString: ctx.api.storeSettings.databaseUrl });
      await locker.connect();
      try {
        await locker.query(`set search_path to "${ctx.api.storeSettings.databaseSchema}"`);
        await locker.query('begin');
        await locker.query('select * from things where thing_key = $1 for update', [thing.thing_key]);
        const held = ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, { token, body: { events } });
        // Until the writer's transaction waits for the thing's row: for this locker, not for a lock of
        // another suite working in the same database at the same time.
        await untilBlockedBy(locker);
        const refused = await headersOnly(ctx.api.url, `/api/v3/things/${thing.thing_key}/events`, token);
        assert.equal(refused.status, 503);
        assert.equal((refused.headers as Record<string, string>)['retry-after'], '1');
        assert.equal(refused.body.success, false);
        assert.equal(refused.body.errors[0].code, 'unavailable');
        const overMqtt = await device.send('event', { thing_key: thing.thing_key, data: { seq: -2 } });
        assert.equal(overMqtt.http_code, 503, JSON.stringify(overMqtt));
        assert.equal(overMqtt.http_msg.errors?.[0]?.code, 'unavailable');
        await locker.query('commit');
        assert.equal((await held).status, 200);
      } finally {
        await locker.end();
        await device.close();
      }
      const stored = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: thing.thing_key, per: 100 },
      });
      assert.equal(stored.body[thing.thing_key].total_event_count, MAX_PENDING, stored.text);
      const again = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token,
        body: { events: [{ data: { seq: -1 } }] },
      });
      assert.equal(again.status, 200, 'taken again once the writer caught up');
    });

    it('when the events held and those of a request together pass EVENT_MAX_PENDING then that request is refused with 503, while one that fits is taken', {
      skip: POSTGRES_ONLY(ctx.store.name),
    }, async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const post = (count: number, from: number) =>
        ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
          token,
          body: { events: Array.from({ length: count }, (_, i) => ({ data: { seq: from + i } })) },
        });
      const locker = new pg.Client({ connectionString: ctx.api.storeSettings.databaseUrl });
      await locker.connect();
      try {
        await locker.query(`set search_path to "${ctx.api.storeSettings.databaseSchema}"`);
        await locker.query('begin');
        await locker.query('select * from things where thing_key = $1 for update', [thing.thing_key]);
        const held = post(MAX_PENDING - 5, 0);
        await untilBlockedBy(locker);
        const tooMany = await post(6, 100);
        assert.equal(tooMany.status, 503, tooMany.text);
        assert.equal(tooMany.headers['retry-after'], '1');
        assert.equal(tooMany.body.errors[0].code, 'unavailable');
        // From a device: a sender with nothing queued, not held to a share (docs/operations.md,
        // "Admission of events"), so only the writer's own limit decides.
        const device = new Device(ctx.api.url, await createKeyPair(ctx.api, token));
        const fits = device.event({
          events: Array.from({ length: 5 }, (_, i) => ({ thing_key: thing.thing_key, data: { seq: 200 + i } })),
        });
        await locker.query('commit');
        assert.equal((await held).status, 200);
        assert.equal((await fits).status, 200);
      } finally {
        await locker.end();
      }
      const stored = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: thing.thing_key, per: 100 },
      });
      const seqs = stored.body[thing.thing_key].event_data.map((e: { data: { seq: number } }) => e.data.seq);
      assert.equal(seqs.length, MAX_PENDING, stored.text);
      assert.ok(
        seqs.every((seq: number) => seq < 100 || seq >= 200),
        'nothing of the refused request stored',
      );
    });
  },
  { env: async () => ({ EVENT_MAX_PENDING: String(MAX_PENDING), MQTT_PORT: String(await freePort()) }) },
);
