import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { eventually, type ReceivedRequest, startHttpPeer } from '../support/peers.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { startServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'durable password' };

/** A rule firing an HTTP call on every event of one thing, made through the API. */
async function everyEventWebhook(baseUrl: string, token: string, peerUrl: string, thingKey: string) {
  const rule = await call(baseUrl, 'POST', '/api/v3/rules', {
    token,
    body: { rule: { name: `hook ${thingKey}`, condition: 'n >= 0', trigger: 'every_event', thing_keys: [thingKey] } },
  });
  assert.equal(rule.status, 200, rule.text);
  const action = await call(baseUrl, 'POST', '/api/v3/notification_actions', {
    token,
    body: {
      notification_action: {
        type: 'CallHttpUrlAction',
        rule_key: rule.body.rule.rule_key,
        method: 'POST',
        url: `${peerUrl}/hook/$THING$`,
      },
    },
  });
  assert.equal(action.status, 200, action.text);
  return rule.body.rule.rule_key as string;
}

/** Idempotency keys the peer acknowledged (answered 200), and how many times each. */
function acknowledgedKeys(received: ReceivedRequest[]): Map<string, number> {
  const keys = new Map<string, number>();
  for (const r of received) {
    if (r.status !== 200) continue;
    const key = String(r.headers['idempotency-key']);
    keys.set(key, (keys.get(key) ?? 0) + 1);
  }
  return keys;
}

for (const store of STORES) {
  describe(`queued deliveries survive a crash [${store.name}]`, { skip: store.skip }, () => {
    it('when the server is killed (SIGKILL) with deliveries pending then after restart each is delivered and none the peer acknowledged is sent again', async () => {
      // The peer accepts the first few calls, then fails every call until the server has been killed.
      let accepting = 3;
      const peer = await startHttpPeer(() => {
        if (accepting > 0) {
          accepting -= 1;
          return 200;
        }
        return killed ? 200 : 503;
      });
      let killed = false;
      const settings =
        store.name === 'sqlite'
          ? { databaseUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-deliveries-')), 'db.sqlite')}` }
          : store.fresh();
      const env = {
        ...ADMIN,
        DATABASE_URL: settings.databaseUrl,
        ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
        ALLOW_PRIVATE_WEBHOOKS: 'true',
        DELIVERY_RETRY_BASE_MS: '200',
        DELIVERY_TIMEOUT: '2s',
      };
      const first = await serveProcess(env);
      try {
        const session = await call(first.url, 'POST', '/api_sign_in', {
          body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
        });
        const token = session.body.auth_token as string;
        const pair = await call(first.url, 'POST', '/api/v3/key_pairs', {
          token,
          body: { key_pair: { name: 'kill' } },
        });
        const device = new Device(first.url, pair.body.key_pair as KeyPair);
        assert.equal((await device.register({ thing_key: 'kiln-1' })).status, 200);
        await everyEventWebhook(first.url, token, peer.url, 'kiln-1');
        const events = 12;
        for (let n = 0; n < events; n++) {
          assert.equal((await device.event({ thing_key: 'kiln-1', data: { n } })).status, 200);
        }
        await eventually(
          () => acknowledgedKeys(peer.received).size === 3 && peer.received.some((r) => r.status === 503),
          'three acknowledged calls and a refused one',
        );
        first.child.kill('SIGKILL');
        await stopProcess(first.child, 'SIGKILL');
        killed = true;
        const beforeRestart = acknowledgedKeys(peer.received);

        const second = await serveProcess(env);
        try {
          await eventually(() => acknowledgedKeys(peer.received).size === events, 'every delivery', 20_000);
          await new Promise((resolve) => setTimeout(resolve, 500));
          const after = acknowledgedKeys(peer.received);
          assert.equal(after.size, events);
          for (const [key, count] of after) assert.equal(count, 1, `delivery ${key} was acknowledged ${count} times`);
          const resent = peer.received
            .slice(peer.received.findIndex((r) => r.status === 503))
            .filter((r) => beforeRestart.has(String(r.headers['idempotency-key'])));
          assert.deepEqual(resent, [], 'a delivery the peer acknowledged before the crash was sent again');
        } finally {
          await stopProcess(second.child);
        }
      } finally {
        await stopProcess(first.child, 'SIGKILL');
        await peer.close();
        await store.dispose(settings);
      }
    });
  });
}

const postgres = STORES.find((s) => s.name === 'postgres');
if (postgres) {
  describe('two instances on one PostgreSQL store', { skip: postgres.skip }, () => {
    it('when both drain one queue then every delivery reaches the peer exactly once, and on_enter fires once across instances', async () => {
      const peer = await startHttpPeer();
      const env = { ALLOW_PRIVATE_WEBHOOKS: 'true', DELIVERY_RETRY_BASE_MS: '200' };
      const a = await startServer(postgres, { env });
      const b = await startServer(postgres, { env, storeSettings: a.storeSettings });
      try {
        const token = await a.adminToken();
        const pair = await a.request('POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'two' } } });
        const viaA = new Device(a.url, pair.body.key_pair as KeyPair);
        const viaB = new Device(b.url, pair.body.key_pair as KeyPair);
        assert.equal((await viaA.register({ thing_key: 'press-1' })).status, 200);
        assert.equal((await viaA.register({ thing_key: 'press-2' })).status, 200);
        await everyEventWebhook(a.url, token, peer.url, 'press-1');
        const enter = await a.request('POST', '/api/v3/rules', {
          token,
          body: { rule: { name: 'enter once', condition: 'n > 5', thing_keys: ['press-2'], alert_type: 1 } },
        });
        assert.equal(enter.status, 200, enter.text);
        const sends: Promise<unknown>[] = [];
        for (let n = 0; n < 40; n++) {
          const d = n % 2 === 0 ? viaA : viaB;
          sends.push(d.event({ thing_key: 'press-1', data: { n } }));
          sends.push(d.event({ thing_key: 'press-2', data: { n: 10 + n } }));
        }
        const answers = (await Promise.all(sends)) as { status: number }[];
        assert.ok(answers.every((r) => r.status === 200));
        await eventually(() => acknowledgedKeys(peer.received).size === 40, 'forty deliveries', 20_000);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        assert.equal(peer.received.length, 40, 'no delivery was sent twice');
        const alerts = await a.request('GET', '/api/v3/alerts', { token, query: { thing_key: 'press-2' } });
        assert.equal(alerts.body.total_count, 1, 'the on_enter state is shared by both instances');
      } finally {
        await b.close();
        await a.close();
        await peer.close();
      }
    });
  });
}
