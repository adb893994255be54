import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { it } from 'node:test';
import { createKeyPair, Device, type KeyPair } from '../support/device.ts';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

interface Received {
  topic: string;
  text: string;
  qos: number;
}

describeOnStores(
  'instructions',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;

    /** A connected device of a new key pair with a bi-directional thing, collecting instructions. */
    async function listeningDevice(options: { subscribe?: boolean } = {}) {
      const token = await ctx.api.adminToken();
      const pair = await createKeyPair(ctx.api, token);
      const device = await MqttDevice.connect(brokerUrl(), pair);
      const thingKey = unique('valve');
      const registered = await device.send('register', { thing_key: thingKey, name: 'Valve', bi_directional: true });
      assert.equal(registered.http_code, 200);
      const received: Received[] = [];
      device.client.on('message', (topic, payload, packet) => {
        if (topic.endsWith('/executeInstruction')) received.push({ topic, text: payload.toString(), qos: packet.qos });
      });
      const topic = `Altizon/Datonis/${pair.access_key}/thing/+/executeInstruction`;
      if (options.subscribe !== false) await device.client.subscribeAsync(topic, { qos: 2 });
      return { pair, device, thingKey, received, topic };
    }

    const send = async (thingKey: string, instruction: object, token?: string) =>
      ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
        token: token ?? (await ctx.api.adminToken()),
        body: { instruction },
      });

    async function status(thingKey: string, instructionKey: string) {
      const token = await ctx.api.adminToken();
      const one = await ctx.api.request('GET', `/api/v3/things/${thingKey}/instructions/${instructionKey}`, { token });
      assert.equal(one.status, 200, one.text);
      return one.body.instruction.status as string;
    }

    function checkMessage(
      text: string,
      pair: KeyPair,
      expected: { thingKey: string; alertKey: string; definition: object },
    ) {
      const match =
        /^(\{"timestamp":\d+,"thing_key":.*,"alert_key":.*,"instruction_wrapper":\{"instruction":.*\}\}),"access_key":"([^"]+)","hash":"([0-9a-f]{64})"\}$/.exec(
          text,
        );
      assert.ok(match, `layout: ${text}`);
      const signed = `${match[1]}}`;
      assert.equal(match[2], pair.access_key);
      assert.equal(match[3], createHmac('sha256', pair.secret_key).update(signed).digest('hex'), 'the hash verifies');
      assert.ok(/^[\x20-\x7e]*$/.test(text), 'ASCII only');
      const message = JSON.parse(text);
      assert.deepEqual(Object.keys(message), [
        'timestamp',
        'thing_key',
        'alert_key',
        'instruction_wrapper',
        'access_key',
        'hash',
      ]);
      assert.equal(message.thing_key, expected.thingKey);
      assert.equal(message.alert_key, expected.alertKey);
      assert.ok(message.alert_key.length <= 24);
      assert.deepEqual(message.instruction_wrapper, { instruction: expected.definition });
    }

    it('when an instruction is sent then the device gets it at QoS 2, signed, and its acknowledgement updates the one alert', async () => {
      const { pair, device, thingKey, received } = await listeningDevice();
      try {
        const definition = { command: 'close', percent: 40, note: 'Ventil schließen' };
        const sent = await send(thingKey, { name: 'Close valve', description: 'nightly', definition });
        assert.equal(sent.status, 200, sent.text);
        const instruction = sent.body.instruction;
        assert.equal(instruction.thing_key, thingKey);
        assert.equal(instruction.name, 'Close valve');
        assert.deepEqual(instruction.definition, definition);
        assert.match(instruction.instruction_key, /^[0-9a-z]{10}$/);
        await eventually(() => received.length >= 1, 'the instruction message');
        assert.equal(received[0]?.qos, 2);
        assert.equal(received[0]?.topic, `Altizon/Datonis/${pair.access_key}/thing/${thingKey}/executeInstruction`);
        checkMessage(received[0]?.text ?? '', pair, { thingKey, alertKey: instruction.alert_key, definition });
        await eventually(
          async () => (await status(thingKey, instruction.instruction_key)) === 'delivered',
          'delivered',
        );

        const token = await ctx.api.adminToken();
        const before = await ctx.api.request('GET', '/api/v3/alerts', {
          token,
          query: { instruction_key: instruction.instruction_key },
        });
        assert.equal(before.body.total_count, 1);
        assert.equal(before.body.alerts[0].alert_key, instruction.alert_key);
        assert.equal(before.body.alerts[0].alert_type, 0);
        assert.equal(before.body.alerts[0].instruction_name, 'Close valve');
        assert.equal(before.body.alerts[0].data.instruction.instruction_key, instruction.instruction_key);
        assert.deepEqual(before.body.alerts[0].data.instruction.definition, definition);
        assert.equal(before.body.alerts[0].data.instruction.description, 'nightly');

        const ack = await device.send('alert', {
          alert: {
            alert_key: instruction.alert_key,
            message: 'Valve closed',
            alert_type: 0,
            data: { execution_status: 'success' },
          },
        });
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        const after = await ctx.api.request('GET', '/api/v3/alerts', {
          token,
          query: { instruction_key: instruction.instruction_key },
        });
        assert.equal(after.body.total_count, 1, 'the acknowledgement updates the alert, it adds none');
        const alert = after.body.alerts[0];
        assert.equal(alert.message, 'Valve closed');
        assert.equal(alert.data.execution_status, 'success');
        assert.equal(alert.data.instruction.name, 'Close valve');
        assert.equal(alert.data.thing.thing_key, thingKey);
        assert.equal(await status(thingKey, instruction.instruction_key), 'acknowledged');
        const listed = await ctx.api.request('GET', `/api/v3/things/${thingKey}/instructions`, { token });
        assert.equal(listed.body.total_count, 1);
        assert.equal(listed.body.instructions[0].status, 'acknowledged');
        const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
          token,
          query: { entity_type: 'Instruction', entity_key: instruction.instruction_key },
        });
        assert.equal(audit.body.total_count, 1);
      } finally {
        await device.close();
      }
    });

    it('when an instruction is not acknowledged then it is sent again when the device subscribes again, and not after', async () => {
      const { pair, device, thingKey, received, topic } = await listeningDevice({ subscribe: false });
      try {
        const sent = await send(thingKey, { name: 'Open', definition: { command: 'open' } });
        assert.equal(sent.status, 200, sent.text);
        const instruction = sent.body.instruction;
        assert.equal(instruction.status, 'pending');
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(received.length, 0, 'nobody listened');
        await device.client.subscribeAsync(topic, { qos: 2 });
        await eventually(() => received.length === 1, 'the instruction after subscribing');
        await eventually(
          async () => (await status(thingKey, instruction.instruction_key)) === 'delivered',
          'delivered',
        );
        await device.client.unsubscribeAsync(topic);
        await device.client.subscribeAsync(topic, { qos: 2 });
        await eventually(() => received.length === 2, 'sent again: delivered is not acknowledged');
        // Acknowledged over HTTP this time.
        const http = new Device(ctx.api.url, pair);
        const ackResponse = await http.put(`/api/v3/alerts/${instruction.alert_key}`, {
          alert: { message: 'Opened', alert_type: 0, data: { execution_status: 'success' } },
        });
        assert.equal(ackResponse.status, 200, ackResponse.text);
        assert.equal(await status(thingKey, instruction.instruction_key), 'acknowledged');
        await device.client.unsubscribeAsync(topic);
        await device.client.subscribeAsync(`Altizon/Datonis/${pair.access_key}/thing/${thingKey}/executeInstruction`, {
          qos: 2,
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(received.length, 2, 'an acknowledged instruction is not sent again');
      } finally {
        await device.close();
      }
    });

    it('when an instruction is malformed, for a one-way thing, unknown, foreign or not permitted then it is refused', async () => {
      const token = await ctx.api.adminToken();
      const oneWay = await createThing(ctx.api, token, { bi_directional: false });
      const twoWay = await createThing(ctx.api, token, { bi_directional: true });
      const refused = await send(oneWay.thing_key, { name: 'x', definition: {} });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.message, /bi-directional/);
      assert.equal((await send('no-such-thing', { name: 'x', definition: {} })).status, 404);
      const noName = await send(twoWay.thing_key, { definition: {} });
      assert.equal(noName.status, 400);
      assert.equal(noName.body.errors[0].param, 'instruction.name');
      const noDefinition = await send(twoWay.thing_key, { name: 'x' });
      assert.equal(noDefinition.status, 400);
      assert.equal(noDefinition.body.errors[0].param, 'instruction.definition');
      assert.equal((await send(twoWay.thing_key, { name: 'x', definition: 'open' })).status, 400);
      assert.equal((await send(twoWay.thing_key, { name: 'x', definition: {}, colour: 'red' })).status, 400);
      const reader = await userWithAbilities(ctx.api, token, [41]);
      assert.equal((await send(twoWay.thing_key, { name: 'x', definition: {} }, reader.token)).status, 403);
      const child = await childOrganisation(ctx.api, token);
      assert.equal((await send(twoWay.thing_key, { name: 'x', definition: {} }, child.token)).status, 404);
      const list = await ctx.api.request('GET', `/api/v3/things/${twoWay.thing_key}/instructions`, {
        token: child.token,
      });
      assert.equal(list.status, 404);
      const mine = await ctx.api.request('GET', `/api/v3/things/${twoWay.thing_key}/instructions`, { token });
      assert.equal(mine.body.total_count, 0, 'nothing was stored');
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);
