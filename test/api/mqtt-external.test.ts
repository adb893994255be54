import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import mqtt from 'mqtt';
import { PENDING_SENT_AGAIN } from '../../src/mqtt/instructions.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { type HangingProxy, hangingProxy } from '../support/hanging-proxy.ts';
import { testBroker } from '../support/mosquitto.ts';
import { type Ack, MqttDevice } from '../support/mqtt-device.ts';
import { eventually } from '../support/peers.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

// A broker of this file's own where Mosquitto is installed: other instances on a shared one would
// answer these devices' messages too (support/mosquitto.ts).
const broker = await testBroker();
const MOSQUITTO_URL = broker.url;

async function brokerReachable(): Promise<string | false> {
  try {
    const client = await mqtt.connectAsync(MOSQUITTO_URL, { reconnectPeriod: 0, connectTimeout: 2000 });
    await client.endAsync();
    return false;
  } catch (error) {
    return `the MQTT broker at ${MOSQUITTO_URL} is not reachable (${(error as Error).message})`;
  }
}

const postgres = STORES.find((s) => s.name === 'postgres');
const brokerSkip = await brokerReachable();
if (brokerSkip && process.env.CI) throw new Error(`CI needs an MQTT broker for the test suite: ${brokerSkip}`);
const skip = brokerSkip || postgres?.skip || false;

after(() => broker.stop());

describe('two instances behind one external broker and one PostgreSQL', {
  skip: skip ? `${skip}; skipping` : false,
}, () => {
  let first: TestServer;
  let second: TestServer;
  // A group of this run's own, so other Thingbase instances on the same broker take no part.
  const env = { MQTT_URL: MOSQUITTO_URL, MQTT_SHARE_GROUP: `thingbase-test-${randomBytes(4).toString('hex')}` };

  before(async () => {
    if (!postgres) return;
    first = await startServer(postgres, { env });
    second = await startServer(postgres, { env, storeSettings: first.storeSettings });
  });
  after(async () => {
    await second?.close();
    await first?.close();
  });

  it('when devices publish through the broker then every message is handled exactly once and both instances answer alike', async () => {
    const token = await first.adminToken();
    const pair = await createKeyPair(first, token);
    const thingKey = `ext-${randomBytes(4).toString('hex')}`;
    assert.equal((await new Device(first.url, pair).register({ thing_key: thingKey })).status, 200);
    const device = await MqttDevice.connect(MOSQUITTO_URL, pair);
    try {
      const count = 60;
      for (let n = 0; n < count; n++) {
        const ack = await device.send('event', { thing_key: thingKey, timestamp: 1_700_000_000_000 + n, data: { n } });
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
      }
      for (const server of [first, second]) {
        const data = await server.request('POST', '/api/v3/query/thing_data', {
          token: await server.adminToken(),
          body: { thing_key: thingKey, per: 1000 },
        });
        assert.equal(data.body[thingKey].total_event_count, count, 'each message stored exactly once');
        const values = data.body[thingKey].event_data.map((e: any) => e.data.n).sort((a: number, b: number) => a - b);
        assert.deepEqual(
          values,
          Array.from({ length: count }, (_, n) => n),
        );
      }
    } finally {
      await device.close();
    }
  });

  it('when a message through the broker has no hash or a forged one then it is refused', async () => {
    const pair = await createKeyPair(first, await first.adminToken());
    const thingKey = `ext-${randomBytes(4).toString('hex')}`;
    await new Device(first.url, pair).register({ thing_key: thingKey });
    const device = await MqttDevice.connect(MOSQUITTO_URL, pair);
    try {
      const unsigned = await device.publishRaw('event', JSON.stringify({ thing_key: thingKey, data: { v: 1 } }));
      assert.equal(unsigned.http_code, 401);
      const forged = device
        .envelope({ thing_key: thingKey, data: { v: 1 } })
        .replace(/"hash":"[0-9a-f]+"/, `"hash":"${'1'.repeat(64)}"`);
      assert.equal((await device.publishRaw('event', forged)).http_code, 401);
      const data = await first.request('POST', '/api/v3/query/thing_data', {
        token: await first.adminToken(),
        body: { thing_key: thingKey },
      });
      assert.equal(data.body[thingKey].total_event_count, 0);
    } finally {
      await device.close();
    }
  });

  it('when an instruction is sent through one instance then a device on the broker receives it at QoS 2 and it is delivered', async () => {
    const token = await second.adminToken();
    const pair = await createKeyPair(second, token);
    const thingKey = `ext-${randomBytes(4).toString('hex')}`;
    assert.equal(
      (await new Device(second.url, pair).register({ thing_key: thingKey, bi_directional: true })).status,
      200,
    );
    const device = await MqttDevice.connect(MOSQUITTO_URL, pair);
    try {
      const received: { text: string; qos: number }[] = [];
      device.client.on('message', (topic, payload, packet) => {
        if (topic.endsWith('/executeInstruction')) received.push({ text: payload.toString(), qos: packet.qos });
      });
      await device.client.subscribeAsync(`Altizon/Datonis/${pair.access_key}/thing/${thingKey}/executeInstruction`, {
        qos: 2,
      });
      const sent = await second.request('POST', `/api/v3/things/${thingKey}/instructions`, {
        token,
        body: { instruction: { name: 'Reset', definition: { command: 'reset' } } },
      });
      assert.equal(sent.status, 200, sent.text);
      const deadline = Date.now() + 5000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(received.length, 1);
      assert.equal(received[0]?.qos, 2);
      const message = JSON.parse(received[0]?.text ?? '{}');
      assert.equal(message.alert_key, sent.body.instruction.alert_key);
      assert.deepEqual(message.instruction_wrapper, { instruction: { command: 'reset' } });
      const one = await first.request(
        'GET',
        `/api/v3/things/${thingKey}/instructions/${sent.body.instruction.instruction_key}`,
        {
          token: await first.adminToken(),
        },
      );
      assert.equal(one.body.instruction.status, 'delivered');
    } finally {
      await device.close();
    }
  });
});

describe('an instance started behind an external broker with instructions pending', {
  skip: skip ? `${skip}; skipping` : false,
}, () => {
  it('when instructions were stored by a server that could not send them then the next server on the broker sends them, and they are delivered', async () => {
    assert.ok(postgres);
    const storeSettings = postgres.fresh();
    try {
      // A server without MQTT stores instructions as pending (as one stopped while the broker was away
      // leaves those it held).
      const first = await startServer(postgres, { env: { MQTT_PORT: '0' }, storeSettings });
      const token = await first.adminToken();
      const pair = await createKeyPair(first, token);
      const thingKey = `pend-${randomBytes(4).toString('hex')}`;
      let sent: { instruction_key: string; alert_key: string };
      try {
        assert.equal(
          (await new Device(first.url, pair).register({ thing_key: thingKey, bi_directional: true })).status,
          200,
        );
        const answer = await first.request('POST', `/api/v3/things/${thingKey}/instructions`, {
          token,
          body: { instruction: { name: 'Reset', definition: { command: 'reset' } } },
        });
        assert.equal(answer.status, 200, answer.text);
        sent = answer.body.instruction;
        // Newer pending instructions, as many as are sent again, of an organisation no device can be sent
        // them for (it has no key pair): they take no place of those that can be sent.
        const now = Date.now();
        await first.server.store.db
          .insertInto('instructions')
          .values(
            Array.from({ length: PENDING_SENT_AGAIN }, (_, i) => ({
              instruction_key: `orphan${i}`,
              organisation_key: 'orphan-organisation',
              thing_key: 'orphan-thing',
              name: 'Open',
              description: null,
              definition: '{}',
              alert_key: `orphan-alert-${i}`,
              status: 'pending',
              delivered_at: null,
              acknowledged_at: null,
              created_at: now + 1000 + i,
              updated_at: now + 1000 + i,
            })),
          )
          .execute();
      } finally {
        await first.close();
      }
      const device = await MqttDevice.connect(MOSQUITTO_URL, pair);
      const received: string[] = [];
      device.client.on('message', (topic, payload) => {
        if (topic.endsWith('/executeInstruction')) received.push(payload.toString());
      });
      await device.client.subscribeAsync(`Altizon/Datonis/${pair.access_key}/thing/${thingKey}/executeInstruction`, {
        qos: 2,
      });
      const second = await startServer(postgres, {
        env: { MQTT_URL: MOSQUITTO_URL, MQTT_SHARE_GROUP: `thingbase-test-${randomBytes(4).toString('hex')}` },
        storeSettings,
      });
      try {
        await eventually(() => received.length > 0, 'the pending instruction on the broker');
        assert.equal(JSON.parse(received[0] as string).alert_key, sent.alert_key);
        const status = async () =>
          (
            await second.request('GET', `/api/v3/things/${thingKey}/instructions/${sent.instruction_key}`, {
              token: await second.adminToken(),
            })
          ).body.instruction.status;
        await eventually(async () => (await status()) === 'delivered', 'the instruction delivered');
        assert.equal(received.length, 1, 'sent once');
      } finally {
        await device.close();
        await second.close();
      }
    } finally {
      await postgres.dispose(storeSettings);
    }
  });
});

describe('an instance behind an external broker while its store stands still', {
  skip: skip ? `${skip}; skipping` : false,
}, () => {
  const MAX_PENDING = 5;
  // Short, so that a store standing still outlasts one and a half keep-alives within a test.
  const KEEPALIVE_S = 2;
  let server: TestServer;
  // Between the server and the broker, to cut the server's connection.
  let proxy: HangingProxy;

  before(async () => {
    if (!postgres) return;
    const target = new URL(MOSQUITTO_URL);
    proxy = await hangingProxy({ host: target.hostname, port: Number(target.port || 1883) });
    server = await startServer(postgres, { env: serverEnv() });
  });
  const serverEnv = () => ({
    MQTT_URL: `mqtt://127.0.0.1:${proxy.port}`,
    MQTT_SHARE_GROUP: `thingbase-test-${randomBytes(4).toString('hex')}`,
    MQTT_MAX_PENDING: String(MAX_PENDING),
    MQTT_KEEPALIVE: `${KEEPALIVE_S}s`,
  });
  after(async () => {
    await server?.close();
    await proxy?.close();
  });

  const external = () => {
    const broker = server.server.externalBroker;
    assert.ok(broker, 'the server serves devices through the external broker');
    return broker;
  };
  /** Events waiting to be written or being written: every message being handled, with the store still. */
  const pendingRows = async () => {
    const metrics = (await server.request('GET', '/metrics')).text;
    return Number(/^thingbase_event_writer_pending_rows (\d+)$/m.exec(metrics)?.[1]);
  };
  /** The intake's gauge on /metrics: messages being handled, and 1 while one is held back. */
  const intakeMetrics = async () => {
    const metrics = (await server.request('GET', '/metrics')).text;
    const of = (state: string) =>
      Number(new RegExp(`^thingbase_mqtt_external_messages\\{state="${state}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    return { handled: of('handled'), held: of('held') };
  };
  /** Holds the events table, so that no event is written until `work` ends. */
  const withStoreStill = (work: () => Promise<void>) =>
    server.server.store.db.transaction().execute(async (tx) => {
      await sql`lock table events in exclusive mode`.execute(tx);
      await work();
    });
  /** Until the server has taken what it will: more than it may, or as many with the next held back. */
  const untilTaken = () =>
    eventually(async () => {
      const rows = await pendingRows();
      return rows > MAX_PENDING || (rows === MAX_PENDING && external().figures().held);
    }, 'the server to take the messages it may');
  const newDevice = async () => {
    const pair = await createKeyPair(server, await server.adminToken());
    const thingKey = `still-${randomBytes(4).toString('hex')}`;
    assert.equal((await new Device(server.url, pair).register({ thing_key: thingKey })).status, 200);
    const device = await MqttDevice.connect(MOSQUITTO_URL, pair);
    /** Publishes events numbered `from` on (the broker has each when it settles); answers their contexts. */
    const publish = async (from: number, count: number) => {
      const texts = Array.from({ length: count }, (_, i) =>
        device.envelope({ thing_key: thingKey, timestamp: 1_700_000_000_000 + from + i, data: { n: from + i } }),
      );
      await Promise.all(
        texts.map((text) => device.client.publishAsync(`Altizon/Datonis/${device.clientId}/event`, text, { qos: 1 })),
      );
      return texts.map((text) => /"hash":"([0-9a-f]+)"/.exec(text)?.[1] as string);
    };
    const stored = async () => {
      const data = await server.request('POST', '/api/v3/query/thing_data', {
        token: await server.adminToken(),
        body: { thing_key: thingKey, per: 1000 },
      });
      return (data.body[thingKey]?.event_data ?? []).map((e: any) => e.data.n).sort((a: number, b: number) => a - b);
    };
    /** The next `count` answers are all 200, and messages 0 to `count - 1` are stored, each once. */
    const answeredAndStoredOnce = async (count: number) => {
      const answers: Ack[] = [];
      while (answers.length < count) answers.push(await device.nextAck());
      assert.deepEqual(
        answers.map((a) => a.http_code),
        Array(count).fill(200),
      );
      assert.deepEqual(
        await stored(),
        Array.from({ length: count }, (_, n) => n),
        'each message stored exactly once',
      );
    };
    return { device, publish, stored, answeredAndStoredOnce };
  };

  it('when a device publishes many more messages than MQTT_MAX_PENDING while the store stands still then the server handles no more than that at once, and once the store moves each is stored once and answered', {
    timeout: 60_000,
  }, async () => {
    const { device, publish, answeredAndStoredOnce } = await newDevice();
    try {
      const count = 8 * MAX_PENDING;
      await withStoreStill(async () => {
        await publish(0, count);
        await untilTaken();
        const rows = await pendingRows();
        assert.ok(rows <= MAX_PENDING, `${rows} messages handled at once, more than MQTT_MAX_PENDING (${MAX_PENDING})`);
      });
      await answeredAndStoredOnce(count);
      assert.equal(external().figures().pending, 0);
      assert.ok(external().figures().highWater <= MAX_PENDING, `at most ${MAX_PENDING} messages handled at once`);
    } finally {
      await device.close();
    }
  });

  it('when the store stands still for longer than one and a half keep-alives while a message is held back then the connection to the broker stays up, the broker keeps the rest, and once the store moves each is stored once and answered', {
    timeout: 60_000,
  }, async () => {
    const { device, publish, answeredAndStoredOnce } = await newDevice();
    try {
      const count = 4 * MAX_PENDING;
      const connections = proxy.connections();
      await withStoreStill(async () => {
        await publish(0, count);
        await untilTaken();
        // mqtt.js takes the broker for gone when no PINGRESP came within 1.5 keep-alives.
        await new Promise((resolve) => setTimeout(resolve, 2.5 * KEEPALIVE_S * 1000));
        assert.equal(proxy.connections(), connections, 'no connection to the broker made again');
        assert.ok(external().connected(), 'connected while the store stands still');
        assert.ok(external().figures().held, 'a message still held back');
        assert.ok((await pendingRows()) <= MAX_PENDING, 'the broker keeps what the server has not taken');
        assert.deepEqual(await intakeMetrics(), { handled: external().figures().pending, held: 1 }, 'on /metrics');
      });
      await answeredAndStoredOnce(count);
      assert.equal(proxy.connections(), connections, 'nor once the store moves');
      assert.deepEqual(await intakeMetrics(), { handled: 0, held: 0 }, 'on /metrics once the store moves');
    } finally {
      await device.close();
    }
  });

  it('when the connection to the broker is lost while a message is held back then the server connects again and handles what is sent afterwards', {
    timeout: 60_000,
  }, async () => {
    const { device, publish, stored } = await newDevice();
    try {
      await withStoreStill(async () => {
        await publish(0, 4 * MAX_PENDING);
        await untilTaken();
        proxy.cut();
        await eventually(() => !external().connected(), 'the connection to be lost');
        assert.equal(external().figures().held, false, 'the message held is dropped with its connection');
        proxy.resume();
        await eventually(() => external().connected(), 'the connection to be made again');
      });
      // Those the broker held for the lost connection are gone with it (its session is clean); their
      // devices, unanswered, would send them again.
      const later = await publish(1000, 4 * MAX_PENDING);
      const answered = new Set<string>();
      while (later.some((context) => !answered.has(context))) {
        const ack = await device.nextAck();
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        answered.add(ack.context);
      }
      const values = await stored();
      assert.equal(new Set(values).size, values.length, 'no message stored twice');
      for (let n = 1000; n < 1000 + 4 * MAX_PENDING; n++) assert.ok(values.includes(n), `message ${n} stored`);
      assert.ok(external().figures().highWater <= MAX_PENDING, `at most ${MAX_PENDING} messages handled at once`);
    } finally {
      await device.close();
    }
  });

  it('when the connection to the broker is closed while a message is held back then the close ends, the message held dropped', {
    timeout: 60_000,
  }, async () => {
    const { device, publish } = await newDevice();
    try {
      await withStoreStill(async () => {
        await publish(0, 2 * MAX_PENDING);
        await untilTaken();
        await external().close();
        assert.equal(external().figures().held, false);
      });
    } finally {
      await device.close();
    }
  });

  it('when the server stops while messages are being stored then each is stored once and answered before the connection to the broker closes', {
    timeout: 60_000,
  }, async () => {
    // The test before closed this server's broker: a server of its own.
    await server.close();
    server = await startServer(postgres as NonNullable<typeof postgres>, { env: serverEnv() });
    const { device, publish, answeredAndStoredOnce } = await newDevice();
    try {
      const count = MAX_PENDING - 1;
      let closed: Promise<void> | undefined;
      await withStoreStill(async () => {
        await publish(0, count);
        await eventually(async () => (await pendingRows()) === count, 'the messages being stored');
        closed = external().close();
        // The store moves again within the stop's wait for the broker.
        await new Promise((resolve) => setTimeout(resolve, 300));
      });
      await closed;
      await answeredAndStoredOnce(count);
    } finally {
      await device.close();
    }
  });
});
