/**
 * A delivery attempt is bounded as a whole by DELIVERY_TIMEOUT (docs/configuration.md, "Notification
 * deliveries"): a mail server that answers a line at a time, never falling silent, cannot hold an
 * attempt, or the deliveries behind it, for ever.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { Device, type KeyPair } from '../support/device.ts';
import { eventually } from '../support/peers.ts';
import { startServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const sqlite = STORES.find((s) => s.name === 'sqlite');

/** An SMTP server that greets, then answers EHLO with a continuation line every 200 ms, without end. */
async function tricklingSmtp() {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.write('220 trickle ESMTP\r\n');
    socket.once('data', () => {
      const timer = setInterval(() => socket.write('250-still thinking\r\n'), 200);
      socket.on('close', () => {
        clearInterval(timer);
        sockets.delete(socket);
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    open: () => sockets.size,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a delivery attempt bounded as a whole', { skip: sqlite?.skip ?? 'no SQLite case' }, () => {
  it('when the mail server trickles its answer then the attempt fails at DELIVERY_TIMEOUT and its connection is closed', async () => {
    if (!sqlite) return;
    const smtp = await tricklingSmtp();
    const server = await startServer(sqlite, {
      env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, DELIVERY_TIMEOUT: '1s', DELIVERY_RETRY_BASE_MS: '60000' },
    });
    try {
      const token = await server.adminToken();
      const pair = await server.request('POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'mail' } } });
      const device = new Device(server.url, pair.body.key_pair as KeyPair);
      assert.equal((await device.register({ thing_key: 'oven-1' })).status, 200);
      const rule = await server.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'hot oven', condition: 'temperature > 80', alert_type: 2 } },
      });
      const action = await server.request('POST', '/api/v3/notification_actions', {
        token,
        body: {
          notification_action: {
            type: 'EmailNotificationAction',
            rule_key: rule.body.rule.rule_key,
            to: 'ops@example.com',
          },
        },
      });
      assert.equal(action.status, 200, action.text);
      const actionKey = action.body.notification_action.notification_action_key as string;
      assert.equal((await device.event({ thing_key: 'oven-1', data: { temperature: 95 } })).status, 200);

      const attempts = async () =>
        (await server.request('GET', `/api/v3/notification_actions/${actionKey}/deliveries`, { token })).body
          .deliveries as { status: string; error: string | null }[];
      await eventually(async () => (await attempts()).length === 1, 'the attempt recorded', 10_000);
      const [attempt] = await attempts();
      assert.equal(attempt?.status, 'failed');
      assert.match(String(attempt?.error), /abort/i);
      await eventually(() => smtp.open() === 0, 'the connection to the mail server closed', 5000);
    } finally {
      await server.close();
      await smtp.close();
    }
  });
});
