/**
 * Sessions on the device endpoint (docs/devices.md, "The device endpoint"): a device that connects without a
 * clean start (MQTT 3.1.1 `clean: false`, MQTT 5 with a Session Expiry Interval) finds its session when
 * it comes back: its subscriptions, the instructions and answers not yet acknowledged, and those due
 * while it was away. With mqtt.js devices over MQTT 3.1.1 and 5.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { type Ack, MqttDevice } from '../support/mqtt-device.ts';
import { connectPacket, mqttPacket, parsePackets } from '../support/mqtt-packet.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

interface Received {
  topic: string;
  text: string;
  qos: number;
  dup: boolean;
}

const VERSIONS = [
  { name: 'MQTT 3.1.1', protocolVersion: 4 as const },
  { name: 'MQTT 5', protocolVersion: 5 as const },
];

describeOnStores(
  'sessions on the device endpoint',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;
    const instructionTopic = (pair: KeyPair) => `Altizon/Datonis/${pair.access_key}/thing/+/executeInstruction`;

    /** An mqtt.js device collecting what it receives; a kept session unless told otherwise. */
    async function connectDevice(
      pair: KeyPair,
      clientId: string,
      protocolVersion: 4 | 5,
      { thing, ...options }: IClientOptions & { thing?: string } = {},
    ) {
      const client = mqtt.connect(brokerUrl(), {
        clientId,
        username: pair.access_key,
        password: sign(pair.secret_key, pair.access_key),
        clean: false,
        reconnectPeriod: 0,
        protocolVersion,
        ...(protocolVersion === 5 ? { properties: { sessionExpiryInterval: 600 } } : {}),
        ...options,
      });
      const received: Received[] = [];
      // Listening before the CONNACK: a resumed session's messages may arrive in the same read.
      client.on('message', (topic, payload, packet) => {
        // Subscribing to `+` brings the organisation's older instructions again: only those of `thing` count.
        if (thing === undefined || topic.includes(`/thing/${thing}/`)) {
          received.push({ topic, text: payload.toString(), qos: packet.qos, dup: packet.dup });
        }
      });
      const connack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
        client.once('connect', resolve);
        client.once('error', reject);
      });
      return { client, received, sessionPresent: connack.sessionPresent };
    }

    /** A key pair and a bi-directional thing of it, registered by a device of its own. */
    async function thingOfNewPair() {
      const token = await ctx.api.adminToken();
      const pair = await createKeyPair(ctx.api, token);
      const registrar = await MqttDevice.connect(brokerUrl(), pair);
      const thingKey = unique('valve');
      const registered = await registrar.send('register', { thing_key: thingKey, name: 'Valve', bi_directional: true });
      assert.equal(registered.http_code, 200, JSON.stringify(registered));
      await registrar.close();
      return { pair, thingKey, token };
    }

    const sendInstruction = async (thingKey: string, token: string) => {
      const sent = await ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
        token,
        body: { instruction: { name: 'Open', definition: { command: 'open' } } },
      });
      assert.equal(sent.status, 200, sent.text);
      return sent.body.instruction as { instruction_key: string; alert_key: string };
    };
    const instructionStatus = async (thingKey: string, instructionKey: string, token: string) => {
      const one = await ctx.api.request('GET', `/api/v3/things/${thingKey}/instructions/${instructionKey}`, { token });
      return one.body.instruction.status as string;
    };
    const closed = (client: MqttClient) => new Promise<void>((resolve) => client.stream.once('close', () => resolve()));

    for (const { name, protocolVersion } of VERSIONS) {
      it(`${name}: when a device comes back without a clean start then its session is present and it gets the instruction sent while it was away without subscribing again`, async () => {
        const { pair, thingKey, token } = await thingOfNewPair();
        const clientId = unique('kept');
        const first = await connectDevice(pair, clientId, protocolVersion);
        assert.equal(first.sessionPresent, false, 'a new session');
        await first.client.subscribeAsync(instructionTopic(pair), { qos: 2 });
        await first.client.endAsync();

        const instruction = await sendInstruction(thingKey, token);
        const again = await connectDevice(pair, clientId, protocolVersion, { thing: thingKey });
        try {
          assert.equal(again.sessionPresent, true, 'the session is resumed');
          await eventually(() => again.received.length >= 1, 'the instruction sent while the device was away');
          assert.equal(again.received[0]?.qos, 2);
          assert.equal(JSON.parse(again.received[0]?.text ?? '{}').alert_key, instruction.alert_key);
          await eventually(
            async () => (await instructionStatus(thingKey, instruction.instruction_key, token)) === 'delivered',
            'delivered once the device has it',
          );
        } finally {
          await again.client.endAsync();
        }
      });

      it(`${name}: when a device goes away before completing an instruction's handshake then it is sent again as a duplicate when it comes back`, async () => {
        const { pair, thingKey, token } = await thingOfNewPair();
        const clientId = unique('inflight');
        const first = await connectDevice(pair, clientId, protocolVersion);
        await first.client.subscribeAsync(instructionTopic(pair), { qos: 2 });
        // The device goes away the moment the instruction reaches it, before it answers PUBREC.
        const gone = closed(first.client);
        first.client.on('packetreceive', (packet) => {
          if (packet.cmd === 'publish' && packet.topic.includes(`/thing/${thingKey}/`)) first.client.stream.destroy();
        });
        const instruction = await sendInstruction(thingKey, token);
        await gone;
        first.client.end(true);
        assert.equal(await instructionStatus(thingKey, instruction.instruction_key, token), 'pending');

        const again = await connectDevice(pair, clientId, protocolVersion, { thing: thingKey });
        try {
          assert.equal(again.sessionPresent, true);
          await eventually(() => again.received.length >= 1, 'the instruction sent again');
          assert.equal(again.received.length, 1, 'once');
          assert.equal(again.received[0]?.dup, true, 'marked as sent before');
          assert.equal(JSON.parse(again.received[0]?.text ?? '{}').alert_key, instruction.alert_key);
          await eventually(
            async () => (await instructionStatus(thingKey, instruction.instruction_key, token)) === 'delivered',
            'delivered',
          );
        } finally {
          await again.client.endAsync();
        }
      });

      it(`${name}: when a device goes away before its message is answered then the answer comes on its next connection, and the message is stored once`, async () => {
        const { pair, thingKey } = await thingOfNewPair();
        const clientId = unique('answer');
        const first = await connectDevice(pair, clientId, protocolVersion);
        await first.client.subscribeAsync(`Altizon/Datonis/${clientId}/httpAck`, { qos: 1 });
        // Signed as the SDKs sign (support/mqtt-device.ts, envelope).
        const signed = JSON.stringify({ thing_key: thingKey, data: { v: 7 } });
        const context = sign(pair.secret_key, signed);
        const text = `${signed.slice(0, -1)},"hash":"${context}","access_key":"${pair.access_key}","aliot_protocol_version":2.0}`;
        // Sent, and the device closes its side at once: the answer, sent or not, is not acknowledged there.
        const gone = closed(first.client);
        first.client.publish(`Altizon/Datonis/${clientId}/event`, text, { qos: 1 });
        first.client.stream.end();
        await gone;
        first.client.end(true);

        const again = await connectDevice(pair, clientId, protocolVersion);
        try {
          assert.equal(again.sessionPresent, true);
          await eventually(() => again.received.length >= 1, 'the answer, on the next connection');
          assert.equal(again.received.length, 1, 'once');
          const ack = JSON.parse(again.received[0]?.text ?? '{}') as Ack;
          assert.equal(again.received[0]?.topic, `Altizon/Datonis/${clientId}/httpAck`);
          assert.equal(ack.context, context);
          assert.equal(ack.http_code, 200, JSON.stringify(ack));
          assert.equal(await storedEventCount(ctx.api, thingKey), 1);
        } finally {
          await again.client.endAsync();
        }
      });

      it(`${name}: when a device connects with a clean start then nothing of its session before is kept`, async () => {
        const { pair } = await thingOfNewPair();
        const clientId = unique('clean');
        const first = await connectDevice(pair, clientId, protocolVersion);
        await first.client.subscribeAsync(instructionTopic(pair), { qos: 2 });
        await first.client.endAsync();
        const clean = await connectDevice(pair, clientId, protocolVersion, { clean: true });
        assert.equal(clean.sessionPresent, false);
        await clean.client.endAsync();
        // The clean session ended with its connection (MQTT 5: it asked for an expiry, but a clean start).
        const after = await connectDevice(pair, clientId, protocolVersion, {
          ...(protocolVersion === 5 ? { properties: { sessionExpiryInterval: 0 } } : { clean: true }),
        });
        assert.equal(after.sessionPresent, protocolVersion === 5, 'MQTT 5: the clean start kept its expiry');
        await after.client.endAsync();
        const last = await connectDevice(pair, clientId, protocolVersion);
        assert.equal(last.sessionPresent, false, 'ended with the connection that kept none');
        await last.client.endAsync();
      });
    }

    it('when a connection takes over a session whose connection has not yet closed then the instructions sent meanwhile reach it', async () => {
      const { pair, thingKey, token } = await thingOfNewPair();
      const clientId = unique('over');
      // The first device keeps its side open once the server has closed its own: a device that has
      // not yet read the server's end.
      const first = connect({ port: ctx.api.server.mqttPort as number, host: '127.0.0.1', allowHalfOpen: true });
      first.on('error', () => {});
      const firstPackets: Record<string, unknown>[] = [];
      first.on('data', (chunk) => firstPackets.push(...parsePackets(chunk)));
      first.write(connectPacket(clientId, pair, 60, { clean: false }));
      first.write(
        mqttPacket.generate({
          cmd: 'subscribe',
          messageId: 1,
          subscriptions: [{ topic: instructionTopic(pair), qos: 2 }],
        }),
      );
      await eventually(() => firstPackets.some((p) => p.cmd === 'suback'), 'the SUBACK');
      const second = await connectDevice(pair, clientId, 4, { thing: thingKey });
      try {
        assert.equal(second.sessionPresent, true);
        const instruction = await sendInstruction(thingKey, token);
        await eventually(() => second.received.length >= 1, 'the instruction, on the connection that took over');
        assert.equal(JSON.parse(second.received[0]?.text ?? '{}').alert_key, instruction.alert_key);
      } finally {
        first.destroy();
        await second.client.endAsync();
      }
    });

    it('MQTT 5: when a session has expired then the device finds none; an expiry of 0 ends it with the connection', async () => {
      const { pair } = await thingOfNewPair();
      const brief = unique('brief');
      const first = await connectDevice(pair, brief, 5, { properties: { sessionExpiryInterval: 1 } });
      await first.client.endAsync();
      await new Promise((resolve) => setTimeout(resolve, 1600));
      const later = await connectDevice(pair, brief, 5);
      assert.equal(later.sessionPresent, false, 'expired after 1 s');
      await later.client.endAsync();

      const none = unique('none');
      const a = await connectDevice(pair, none, 5, { properties: { sessionExpiryInterval: 0 } });
      await a.client.endAsync();
      const b = await connectDevice(pair, none, 5);
      assert.equal(b.sessionPresent, false);
      // A DISCONNECT may shorten the expiry to 0: the session then ends with that connection.
      await b.client.endAsync(false, { properties: { sessionExpiryInterval: 0 } });
      const c = await connectDevice(pair, none, 5);
      assert.equal(c.sessionPresent, false);
      await c.client.endAsync();
    });

    it('when more devices are away with a session than MQTT_MAX_SESSIONS then the one away longest loses its session', async () => {
      const { pair } = await thingOfNewPair();
      const ids = [unique('cap'), unique('cap'), unique('cap')];
      for (const clientId of ids) await (await connectDevice(pair, clientId, 4)).client.endAsync();
      const oldest = await connectDevice(pair, ids[0] as string, 4);
      assert.equal(oldest.sessionPresent, false, 'the oldest was let go');
      await oldest.client.endAsync();
      const newest = await connectDevice(pair, ids[2] as string, 4);
      assert.equal(newest.sessionPresent, true);
      await newest.client.endAsync();
    });

    it('when a device of another key pair connects with the same client id then it gets none of the session, and neither ends it nor takes over its connection', async () => {
      const { pair } = await thingOfNewPair();
      const other = await createKeyPair(ctx.api, await ctx.api.adminToken());
      const clientId = unique('shared');
      await (await connectDevice(pair, clientId, 4)).client.endAsync();
      // A clean start: the stranger keeps no session of its own, which would count against the cap.
      const stranger = await connectDevice(other, clientId, 4, { clean: true });
      assert.equal(stranger.sessionPresent, false);
      const owner = await connectDevice(pair, clientId, 4);
      assert.equal(owner.sessionPresent, true, "the key pair's own device still has its session");
      // Both are connected at once: each is its key pair's device.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(stranger.client.connected, true, 'the stranger was not closed by the owner');
      assert.equal(owner.client.connected, true);
      await stranger.client.endAsync();
      await owner.client.endAsync();
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()), MQTT_MAX_SESSIONS: '2' }) },
);
