/**
 * Stopping the server while devices publish over MQTT (docs/deployment.md, "Stopping"): every message
 * the server stored was acknowledged to its device before the connection closed, so no device sends
 * again what is stored already; messages after the stop began are answered 503 or not at all, and
 * devices' wills are not stored.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { createKeyPair } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { type Ack, MqttDevice, signedEnvelope } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { startServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

for (const store of STORES) {
  describe(`stopping with MQTT messages under way [${store.name}]`, { skip: store.skip }, () => {
    it('when the server stops while a device publishes then every event stored was acknowledged 200', async () => {
      // Settings of its own, kept after the first server stops, for the second to read.
      const storeSettings = store.fresh();
      const api = await startServer(store, {
        storeSettings,
        env: async () => ({ MQTT_PORT: String(await freePort()) }),
      });
      let stopped: Promise<void> | undefined;
      try {
        const pair = await createKeyPair(api, await api.adminToken());
        const thingKey = unique('stopping');
        // A will of the same thing: the stop ends the server, not the device, so none is stored.
        const clientId = unique('stopping');
        const device = await MqttDevice.connect(`mqtt://127.0.0.1:${api.server.mqttPort}`, pair, {
          clientId,
          will: {
            topic: `Altizon/Datonis/${clientId}/event`,
            payload: Buffer.from(signedEnvelope(pair, { thing_key: thingKey, data: { will: 1 } })),
            qos: 1,
            retain: false,
          },
        });
        assert.equal((await device.send('register', { thing_key: thingKey })).http_code, 200);
        const answers: Ack[] = [];
        device.client.on('message', (topic, payload) => {
          if (topic.endsWith('/httpAck')) answers.push(JSON.parse(payload.toString()) as Ack);
        });
        device.client.on('error', () => {});
        // The server closes the connection after its last acknowledgement: everything it wrote has been
        // read by then.
        const connectionClosed = new Promise<void>((resolve) => device.client.once('close', () => resolve()));
        const topic = `Altizon/Datonis/${device.clientId}/event`;
        const publish = (i: number) =>
          device.client.publish(topic, device.envelope({ thing_key: thingKey, data: { i } }), { qos: 1 });
        // Messages flow the whole time; the stop begins once some have been stored and answered, so
        // that others are being stored at that moment.
        for (let i = 0; i < 600; i++) {
          publish(i);
          if (!stopped && answers.length >= 30) stopped = api.close();
          if (i % 5 === 4) await new Promise((resolve) => setImmediate(resolve));
        }
        const deadline = Date.now() + 10_000;
        while (!stopped && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 1));
          if (answers.length >= 30) stopped = api.close();
        }
        await stopped;
        await Promise.race([connectionClosed, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        device.client.end(true);
        const acknowledged = answers.filter((a) => a.http_code === 200).length;
        const refused = answers.filter((a) => a.http_code === 503).length;
        assert.equal(
          answers.length,
          acknowledged + refused,
          JSON.stringify(answers.find((a) => ![200, 503].includes(a.http_code))),
        );
        const again = await startServer(store, { storeSettings });
        try {
          const stored = await storedEventCount(again, thingKey);
          assert.ok(stored > 0, 'some events were stored before the stop');
          const figures = `${stored} stored, ${acknowledged} acknowledged 200, ${refused} 503, of 600`;
          assert.equal(stored, acknowledged, figures);
        } finally {
          await again.close();
        }
      } finally {
        if (!stopped) await api.close();
        await store.dispose(storeSettings);
      }
    });

    it('when the server stops while a connection has sent no CONNECT then the stop does not wait for it', async () => {
      const api = await startServer(store, { env: async () => ({ MQTT_PORT: String(await freePort()) }) });
      let closed = false;
      const silent = connect(api.server.mqttPort as number, '127.0.0.1');
      silent.on('error', () => {});
      silent.once('close', () => {
        closed = true;
      });
      try {
        await new Promise<void>((resolve) => silent.once('connect', () => resolve()));
        const began = Date.now();
        await api.close();
        // A connection that sends no CONNECT is otherwise closed after CONNECT_TIMEOUT, 10 s.
        assert.ok(Date.now() - began < 5000, `stopped in ${Date.now() - began} ms`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        assert.equal(closed, true, 'its connection is closed');
      } finally {
        silent.destroy();
      }
    });
  });
}
