/**
 * The delivery worker when the database fails around an attempt (docs/operations.md, "When the
 * database fails"): what the peer was sent is recorded as sent once the database is back, never as a
 * failed attempt to be sent again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Device, type KeyPair } from '../support/device.ts';
import { type HangingProxy, hangingProxy } from '../support/hanging-proxy.ts';
import { eventually, startHttpPeer } from '../support/peers.ts';
import { startServer } from '../support/server.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');

describe('deliveries when the database restarts [postgres]', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  it('when the database drops its connections while a webhook is answered then the delivery is recorded delivered once it is back, and not sent again', async () => {
    if (!postgres) return;
    const settings = postgres.fresh();
    const target = new URL(POSTGRES_URL);
    const proxy: HangingProxy = await hangingProxy({ host: target.hostname, port: Number(target.port || 5432) });
    target.host = `127.0.0.1:${proxy.port}`;
    // The peer takes the call while the database goes away, and answers it; the database is back 1.5 s later.
    let cuts = 0;
    const peer = await startHttpPeer(() => {
      if (cuts++ === 0) {
        proxy.cut();
        setTimeout(() => proxy.resume(), 1500);
      }
      return 200;
    });
    const server = await startServer(postgres, {
      env: { ALLOW_PRIVATE_WEBHOOKS: 'true', DELIVERY_RETRY_BASE_MS: '200', DELIVERY_TIMEOUT: '1s' },
      storeSettings: { databaseUrl: target.toString(), databaseSchema: settings.databaseSchema },
    });
    try {
      const token = await server.adminToken();
      const pair = await server.request('POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'hooks' } } });
      const device = new Device(server.url, pair.body.key_pair as KeyPair);
      assert.equal((await device.register({ thing_key: 'kiln-1' })).status, 200);
      const rule = await server.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'hot kiln', condition: 'temperature > 80', trigger: 'every_event', alert_type: null } },
      });
      const action = await server.request('POST', '/api/v3/notification_actions', {
        token,
        body: {
          notification_action: {
            type: 'CallHttpUrlAction',
            rule_key: rule.body.rule.rule_key,
            method: 'POST',
            url: `${peer.url}/hook/$THING$`,
          },
        },
      });
      assert.equal(action.status, 200, action.text);
      const actionKey = action.body.notification_action.notification_action_key as string;
      assert.equal((await device.event({ thing_key: 'kiln-1', data: { temperature: 95 } })).status, 200);

      await eventually(
        async () => {
          const attempts = await server.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, {
            token,
          });
          return attempts.status === 200 && attempts.body.deliveries?.length > 0;
        },
        'the attempt recorded once the database is back',
        20_000,
      );
      // A claim lapses after 3 x DELIVERY_TIMEOUT + 5 s; a delivery recorded failed is due again sooner.
      await new Promise((resolve) => setTimeout(resolve, 9000));
      const attempts = await server.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token });
      assert.deepEqual(
        attempts.body.deliveries.map((a: { attempt: number; status: string }) => [a.attempt, a.status]),
        [[1, 'delivered']],
      );
      assert.equal(peer.received.length, 1, 'the peer was called once');
    } finally {
      proxy.resume();
      await server.close();
      await peer.close();
      await proxy.close();
      await postgres.dispose(settings);
    }
  });
});
