import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { createKeyPair, Device } from '../support/device.ts';
import { testBroker } from '../support/mosquitto.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
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
    await broker.stop();
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
