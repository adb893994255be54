import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';
import { STORES, type StoreCase } from '../support/stores.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'durable password' };
const THING = 'crash-1';
/** The process is killed as soon as this many events are acknowledged. */
const ENOUGH = 300;

async function signIn(url: string): Promise<string> {
  const session = await call(url, 'POST', '/api_sign_in', {
    body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
  });
  return session.body.auth_token as string;
}

/**
 * Starts the server as its own process, registers THING, lets `send` load it until it kills the
 * process with SIGKILL (answering the numbers of the events acknowledged before), restarts the server
 * on the same database and checks that every acknowledged event is stored.
 */
async function crashAndRestart(
  store: StoreCase,
  send: (server: ServerProcess, pair: KeyPair, kill: () => void) => Promise<number[]>,
  extraEnv: Record<string, string> = {},
): Promise<void> {
  const settings =
    store.name === 'sqlite'
      ? { databaseUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-kill-')), 'db.sqlite')}` }
      : store.fresh();
  const env = {
    ...ADMIN,
    DATABASE_URL: settings.databaseUrl,
    ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
    ...extraEnv,
  };
  const first = await serveProcess(env);
  try {
    const pair = await call(first.url, 'POST', '/api/v3/key_pairs', {
      token: await signIn(first.url),
      body: { key_pair: { name: 'crash test' } },
    });
    const keyPair = pair.body.key_pair as KeyPair;
    assert.equal((await new Device(first.url, keyPair).register({ thing_key: THING })).status, 200);

    const acknowledged = await send(first, keyPair, () => first.child.kill('SIGKILL'));
    await stopProcess(first.child, 'SIGKILL');
    assert.ok(acknowledged.length >= ENOUGH, `only ${acknowledged.length} acknowledged`);

    const second = await serveProcess(env);
    try {
      const data = await call(second.url, 'POST', '/api/v3/query/thing_data', {
        token: await signIn(second.url),
        body: { thing_key: THING, per: 10_000 },
      });
      assert.equal(data.status, 200, data.text);
      const stored = new Set((data.body[THING].event_data as { data: { n: number } }[]).map((e) => e.data.n));
      const lost = acknowledged.filter((n) => !stored.has(n));
      assert.deepEqual(lost, [], `${lost.length} acknowledged events were lost`);
    } finally {
      await stopProcess(second.child);
    }
  } finally {
    await stopProcess(first.child, 'SIGKILL');
    await store.dispose(settings);
  }
}

const eventNumber = (n: number) => ({ thing_key: THING, timestamp: 1_700_000_000_000 + n, data: { n } });

for (const store of STORES) {
  describe(`acknowledged events survive a crash [${store.name}]`, { skip: store.skip }, () => {
    it('when the server is killed (SIGKILL) right after answering HTTP events with 200 then every answered event is there after restart', async () => {
      await crashAndRestart(store, async (server, pair, kill) => {
        const device = new Device(server.url, pair);
        // Many devices' requests in flight at once; the process dies as soon as enough are acknowledged.
        const acknowledged: number[] = [];
        let sent = 0;
        let killed = false;
        const sender = async () => {
          while (!killed) {
            const n = sent++;
            try {
              const response = await device.event(eventNumber(n));
              if (response.status === 200) acknowledged.push(n);
            } catch {
              return; // the connection died with the process
            }
            if (acknowledged.length >= ENOUGH && !killed) {
              killed = true;
              kill();
            }
          }
        };
        await Promise.all(Array.from({ length: 20 }, sender));
        return acknowledged;
      });
    });

    it('when the server is killed (SIGKILL) right after MQTT httpAcks then every acknowledged event is there after restart', async () => {
      const port = await freePort();
      await crashAndRestart(
        store,
        async (server, pair, kill) => {
          // Several devices, each with many QoS 1 messages in flight; each message's hash names its event.
          const devices = await Promise.all(
            Array.from({ length: 5 }, () => MqttDevice.connect(`mqtt://127.0.0.1:${port}`, pair)),
          );
          const acknowledged: number[] = [];
          const pending = new Map<string, number>();
          let sent = 0;
          let killed = false;
          return new Promise<number[]>((resolve) => {
            const finish = () => {
              for (const device of devices) device.client.end(true);
              resolve(acknowledged);
            };
            // Resolves once the process is gone, whether killed here or dead on its own.
            server.child.once('exit', finish);
            for (const device of devices) {
              const publish = () => {
                if (killed) return;
                const n = sent++;
                const text = device.envelope(eventNumber(n));
                pending.set(/"hash":"([0-9a-f]{64})"/.exec(text)?.[1] as string, n);
                device.client.publish(`Altizon/Datonis/${device.clientId}/event`, text, { qos: 1 });
              };
              device.client.on('message', (topic, payload) => {
                if (!topic.endsWith('/httpAck') || killed) return;
                const ack = JSON.parse(payload.toString()) as { context: string; http_code: number };
                const n = pending.get(ack.context);
                if (ack.http_code === 200 && n !== undefined) acknowledged.push(n);
                if (acknowledged.length >= ENOUGH) {
                  killed = true;
                  kill();
                  return;
                }
                publish();
              });
              for (let k = 0; k < 20; k++) publish();
            }
          });
        },
        { MQTT_PORT: String(port) },
      );
    });
  });
}
