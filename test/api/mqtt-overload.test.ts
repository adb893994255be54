import assert from 'node:assert/strict';
import { it } from 'node:test';
import mqtt from 'mqtt';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { flood } from '../support/mqtt-flood.ts';
import { BAD_LOGIN, MQTT_VERSION, SERVER_BUSY } from '../support/mqtt-version.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

const MAX_PENDING = 50;
const MAX_CONNECTIONS = 2;

/** Busy-waits: the server, in this thread, does nothing meanwhile, while devices go on. */
function blockThisThread(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

/** A device's event message as the SDKs send it, signed, and its hash. */
function signedEvent(pair: KeyPair, thingKey: string, seq: number): { text: string; hash: string } {
  const signed = JSON.stringify({ thing_key: thingKey, data: { seq, filler: 'x'.repeat(100) } });
  const hash = sign(pair.secret_key, signed);
  return {
    text: `${signed.slice(0, -1)},"hash":"${hash}","access_key":"${pair.access_key}","aliot_protocol_version":2.0}`,
    hash,
  };
}

describeOnStores(
  'MQTT under overload (embedded broker)',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;

    const storedCount = (thingKey: string) => storedEventCount(ctx.api, thingKey);

    /** A new key pair, and a thing registered through it over MQTT. */
    async function registeredThing(prefix: string): Promise<{ pair: KeyPair; thingKey: string }> {
      const pair = await createKeyPair(ctx.api, await ctx.api.adminToken());
      const registrar = await MqttDevice.connect(brokerUrl(), pair);
      const thingKey = unique(prefix);
      try {
        assert.equal((await registrar.send('register', { thing_key: thingKey })).http_code, 200);
      } finally {
        await registrar.close();
      }
      return { pair, thingKey };
    }

    it('when a device publishes far faster than the server takes its messages then those past the limit are answered 503 at once, and every acknowledged one is stored', async () => {
      const { pair, thingKey } = await registeredThing('flood');
      const count = 3000;
      const hashes: string[] = [];
      // Among them, messages whose hash cannot be read: answered with the context PARSE_ERROR, refused or not.
      const unreadable = ['not json', '{"a":1,"hash":{"h":1}}', '{"hash":"h1","a":1,"hash":"h2"}', '{"a":"\\u0000"'];
      const messages = Array.from({ length: count }, (_, seq) => {
        if (seq % 100 === 50) {
          hashes.push('PARSE_ERROR');
          return unreadable[Math.floor(seq / 100) % unreadable.length] as string;
        }
        const { text, hash } = signedEvent(pair, thingKey, seq);
        hashes.push(hash);
        return text;
      });
      const device = flood({
        port: ctx.api.server.mqttPort as number,
        clientId: `flood${Math.random().toString(36).slice(2, 10)}`,
        username: pair.access_key,
        password: sign(pair.secret_key, pair.access_key),
        messages,
      });
      await device.sent;
      // The server's thread stands still while the device's messages arrive: then all of them are
      // there to read at once, more than may wait.
      blockThisThread(1500);
      const { codes, contexts } = await device.done;
      const answered = Object.values(codes).reduce((a, b) => a + b, 0);
      assert.equal(answered, count, `every message answered: ${JSON.stringify(codes)}`);
      // Refused or not, each answer names its message by its hash (PARSE_ERROR when it has none).
      assert.deepEqual([...contexts].sort(), [...hashes].sort(), 'each message answered once, under its own hash');
      assert.equal(await storedCount(thingKey), codes[200] ?? 0, 'every acknowledged event stored, no other');
      const inbound = await ctx.api.server.deviceEndpoint?.figures();
      assert.ok(inbound, 'the embedded broker runs');
      assert.equal(inbound.pending, 0);
      assert.ok(
        inbound.highWater <= MAX_PENDING,
        `at most ${MAX_PENDING} messages waited at once, not ${inbound.highWater}`,
      );
      assert.ok((codes[503] ?? 0) > 0, 'those past the limit were refused');
    });

    it('when the broker holds as many connections as it may then a further device is refused with CONNACK 3, and admitted once one leaves', async () => {
      const pair = await createKeyPair(ctx.api, await ctx.api.adminToken());
      const devices = [];
      // The earlier test's device may take a moment to be seen gone.
      for (let i = 0; i < MAX_CONNECTIONS; i++) devices.push(await MqttDevice.connectWhenUp(brokerUrl(), pair));
      try {
        await assert.rejects(
          MqttDevice.connect(brokerUrl(), pair),
          (error: Error & { code?: number }) => error.code === SERVER_BUSY,
        );
        await devices.pop()?.close();
        const admitted = await MqttDevice.connectWhenUp(brokerUrl(), pair);
        devices.push(admitted);
        const key = unique('admitted');
        assert.equal((await admitted.send('register', { thing_key: key })).http_code, 200);
      } finally {
        for (const device of devices) await device.close();
      }
      await assert.rejects(
        mqtt.connectAsync(brokerUrl(), {
          reconnectPeriod: 0,
          username: 'x',
          password: 'y',
          protocolVersion: MQTT_VERSION,
        }),
        (error: Error & { code?: number }) => error.code === BAD_LOGIN,
        'the limit counts connections, not attempts',
      );
    });
  },
  {
    env: async () => ({
      MQTT_PORT: String(await freePort()),
      MQTT_MAX_PENDING: String(MAX_PENDING),
      MQTT_MAX_WAIT_MS: '500',
      MQTT_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    }),
  },
);
