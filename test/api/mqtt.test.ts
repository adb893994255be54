import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import { sql } from 'kysely';
import mqtt from 'mqtt';
import { createKeyPair } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { compressLzf } from '../support/lzf-compress.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { connectPacket, mqttPacket } from '../support/mqtt-packet.ts';
import { BAD_LOGIN, MQTT_VERSION } from '../support/mqtt-version.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

/** Bytes of unfinished packets the broker may hold, all connections together (small, for the test). */
const PARTIAL_BYTES = 256 * 1024;

/** A packet's first byte and remaining length (seven bits a byte, low first). */
const packetHeader = (first: number, length: number) => {
  const bytes = [first];
  do {
    const digit = length % 128;
    length = Math.floor(length / 128);
    bytes.push(length > 0 ? digit | 0x80 : digit);
  } while (length > 0);
  return Buffer.from(bytes);
};

describeOnStores(
  'device MQTT interface (embedded broker)',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;
    const keyPair = async () => createKeyPair(ctx.api, await ctx.api.adminToken());

    const storedCount = (thingKey: string) => storedEventCount(ctx.api, thingKey);

    it('when a device registers and sends signed events then each is acknowledged with its hash after it is stored', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        const registered = await device.send('register', { thing_key: key, name: 'Press', bi_directional: false });
        assert.equal(registered.http_code, 200, JSON.stringify(registered));
        const payload = { thing_key: key, timestamp: 1_700_000_000_123, data: { temperature: 17.5, pressure: 42 } };
        const text = device.envelope(payload);
        const ack = await device.publishRaw('event', text);
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        assert.equal(typeof ack.http_code, 'number');
        assert.equal(ack.context, /"hash":"([0-9a-f]{64})"/.exec(text)?.[1]);
        assert.deepEqual(ack.http_msg, {});
        assert.equal(await storedCount(key), 1, 'stored before the acknowledgement');
        const bulk = await device.send('event', {
          events: [
            { thing_key: key, data: { temperature: 18 } },
            { thing_key: key, data: { temperature: 19 } },
          ],
        });
        assert.equal(bulk.http_code, 200);
        assert.equal(await storedCount(key), 3);
        assert.equal((await device.send('heartbeat', { thing_key: key })).http_code, 200);
        const metrics = await ctx.api.request('GET', '/metrics');
        assert.match(metrics.text, /^thingbase_mqtt_connections [1-9]\d*$/m, 'the connected device counts');
        // The register, two events and the heartbeat, each timed from its reading to its answer.
        const answered = Number(/^thingbase_mqtt_message_answer_seconds_count (\d+)$/m.exec(metrics.text)?.[1]);
        assert.ok(answered >= 4, `${answered} answers timed`);
        const within10s = Number(
          /^thingbase_mqtt_message_answer_seconds_bucket\{le="10"\} (\d+)$/m.exec(metrics.text)?.[1],
        );
        assert.equal(within10s, answered, 'each within 10 s');
        const stored = /^thingbase_events_stored_total\{transport="mqtt"\} (\d+)$/m.exec(metrics.text);
        assert.ok(Number(stored?.[1]) >= 3, 'events stored over MQTT are counted as such');
      } finally {
        await device.close();
      }
    });

    it('when the hash is wrong, the access_key is another, or a metric has the wrong type then the acknowledgement says so and nothing is stored', async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(brokerUrl(), pair);
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const forged = device
          .envelope({ thing_key: key, data: { v: 1 } })
          .replace(/"hash":"[0-9a-f]+"/, `"hash":"${'0'.repeat(64)}"`);
        const wrongHash = await device.publishRaw('event', forged);
        assert.equal(wrongHash.http_code, 401);
        assert.equal(wrongHash.http_msg.errors?.[0]?.code, 'unauthorized');
        const other = await keyPair();
        const otherKey = device.envelope({ thing_key: key, data: { v: 1 } }).replace(pair.access_key, other.access_key);
        assert.equal((await device.publishRaw('event', otherKey)).http_code, 401);
        assert.equal((await device.send('event', { thing_key: key, data: { v: 1 } })).http_code, 200);
        const wrongType = await device.send('event', { thing_key: key, data: { v: 'one' } });
        assert.equal(wrongType.http_code, 422);
        assert.equal(typeof wrongType.http_msg.errors?.[0]?.message, 'string');
        const unknownThing = await device.send('event', { thing_key: 'nosuchthing', data: { v: 1 } });
        assert.equal(unknownThing.http_code, 404);
        assert.equal(await storedCount(key), 1);
      } finally {
        await device.close();
      }
    });

    it('when a message cannot be parsed or has no hash then the context is PARSE_ERROR', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const garbage = await device.publishRaw('event', '{"thing_key": "x", "data": ');
        assert.equal(garbage.context, 'PARSE_ERROR');
        assert.equal(garbage.http_code, 500);
        const unsigned = await device.publishRaw('event', JSON.stringify({ thing_key: key, data: { v: 1 } }));
        assert.equal(unsigned.context, 'PARSE_ERROR');
        assert.equal(unsigned.http_code, 200, 'accepted on an authenticated connection');
        assert.equal(await storedCount(key), 1);
      } finally {
        await device.close();
      }
    });

    it('when a device publishes LZF on the lzf topic then the whole payload is decompressed first', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const text = device.envelope({ thing_key: key, data: { note: 'y'.repeat(3000), v: 1 } });
        const ack = await device.publishRaw(
          'event',
          compressLzf(Buffer.from(text)),
          `Altizon/Datonis/lzf/${device.clientId}/event`,
        );
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        assert.equal(await storedCount(key), 1);
      } finally {
        await device.close();
      }
    });

    it('when an LZF payload cannot be decompressed then it is answered 500 with the context PARSE_ERROR and nothing is stored', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const garbage = Buffer.concat([Buffer.from('ZV'), Buffer.from([1, 0, 40, 0, 10]), Buffer.from('not lzf')]);
        const ack = await device.publishRaw('event', garbage, `Altizon/Datonis/lzf/${device.clientId}/event`);
        assert.equal(ack.http_code, 500, JSON.stringify(ack));
        assert.equal(ack.context, 'PARSE_ERROR');
        assert.match(ack.http_msg.errors?.[0]?.message ?? '', /the payload cannot be read/);
        assert.equal(await storedCount(key), 0);
      } finally {
        await device.close();
      }
    });

    it('when a device takes its acknowledgements at QoS 0 they come at QoS 0; without the subscription none come, and its events are still stored', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      const ackTopic = `Altizon/Datonis/${device.clientId}/httpAck`;
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const qos: number[] = [];
        device.client.on('message', (topic, _payload, packet) => {
          if (topic === ackTopic) qos.push(packet.qos);
        });
        await device.client.subscribeAsync(ackTopic, { qos: 0 });
        assert.equal((await device.send('event', { thing_key: key, data: { v: 1 } })).http_code, 200);
        assert.deepEqual(qos, [0]);

        await device.client.unsubscribeAsync(ackTopic);
        await device.client.publishAsync(
          `Altizon/Datonis/${device.clientId}/event`,
          device.envelope({ thing_key: key, data: { v: 2 } }),
          { qos: 1 },
        );
        await eventually(async () => (await storedCount(key)) === 2, 'the second event stored');
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.deepEqual(qos, [0], 'no acknowledgement without the subscription');
      } finally {
        await device.close();
      }
    });

    it('when a device keeps its session (clean: false) then its acknowledgements come at QoS 1 as well, and ids never repeat while in flight', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair(), { clean: false });
      const ackTopic = `Altizon/Datonis/${device.clientId}/httpAck`;
      try {
        const key = unique('mq');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        const received: { qos: number; id: number | undefined }[] = [];
        device.client.on('message', (topic, _payload, packet) => {
          if (topic === ackTopic) received.push({ qos: packet.qos, id: packet.messageId });
        });
        const sent = Array.from({ length: 20 }, (_, i) =>
          device.client.publishAsync(
            `Altizon/Datonis/${device.clientId}/event`,
            device.envelope({ thing_key: key, data: { v: i } }),
            { qos: 1 },
          ),
        );
        await Promise.all(sent);
        const acks = await Promise.all(sent.map(() => device.nextAck()));
        assert.deepEqual(
          acks.map((a) => a.http_code),
          sent.map(() => 200),
        );
        assert.equal(await storedCount(key), 20);
        assert.ok(received.every((r) => r.qos === 1 && r.id !== undefined));
        assert.equal(new Set(received.map((r) => r.id)).size, received.length, 'one id per message');
      } finally {
        await device.close();
      }
    });

    it('when several messages arrive in one read then each is answered with its PUBACK, in order, before any of their acknowledgements', async () => {
      const pair = await keyPair();
      const clientId = unique('raw');
      const key = unique('mq');
      const device = await MqttDevice.connect(brokerUrl(), pair);
      try {
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
      } finally {
        await device.close();
      }
      const socket = connect(ctx.api.server.mqttPort as number, '127.0.0.1');
      const received: Record<string, unknown>[] = [];
      const parser = mqttPacket.parser();
      parser.on('packet', (packet) => received.push(packet));
      socket.on('data', (chunk) => parser.parse(chunk));
      const arrived = (count: number, what: string) => eventually(async () => received.length >= count, what);
      try {
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
        socket.write(connectPacket(clientId, pair));
        await arrived(1, 'the CONNACK');
        socket.write(
          mqttPacket.generate({
            cmd: 'subscribe',
            messageId: 1,
            subscriptions: [{ topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 1 }],
          }),
        );
        await arrived(2, 'the SUBACK');
        const publishes = [11, 12, 13].map((messageId) =>
          mqttPacket.generate({
            cmd: 'publish',
            topic: `Altizon/Datonis/${clientId}/event`,
            payload: Buffer.from(device.envelope({ thing_key: key, data: { v: messageId } })),
            qos: 1,
            messageId,
            retain: false,
            dup: false,
          }),
        );
        socket.write(Buffer.concat(publishes));
        await arrived(8, 'three PUBACKs and three acknowledgements');
        const answers = received.slice(2);
        assert.deepEqual(
          answers.slice(0, 3).map((p) => [p.cmd, p.messageId]),
          [
            ['puback', 11],
            ['puback', 12],
            ['puback', 13],
          ],
        );
        assert.deepEqual(
          answers.slice(3).map((p) => [p.cmd, p.topic, JSON.parse(String(p.payload)).http_code]),
          [1, 2, 3].map(() => ['publish', `Altizon/Datonis/${clientId}/httpAck`, 200]),
        );
        assert.equal(await storedCount(key), 3);
      } finally {
        socket.destroy();
      }
    });

    it('when the store is slow then the PUBACK comes without waiting for the acknowledgement', {
      skip:
        ctx.store.name !== 'postgres' &&
        'holds a lock on PostgreSQL, where the store waits without holding the event loop',
    }, async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      const ackTopic = `Altizon/Datonis/${device.clientId}/httpAck`;
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const acks: number[] = [];
        device.client.on('message', (topic, payload) => {
          if (topic === ackTopic) acks.push(JSON.parse(payload.toString()).http_code);
        });
        await ctx.api.server.store.db.transaction().execute(async (tx) => {
          // The writer's next transaction waits for this one.
          await sql`lock table events in exclusive mode`.execute(tx);
          const published = device.client.publishAsync(
            `Altizon/Datonis/${device.clientId}/event`,
            device.envelope({ thing_key: key, data: { v: 1 } }),
            { qos: 1 },
          );
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise((resolve) => {
            timer = setTimeout(resolve, 5000, 'late');
          });
          const first = await Promise.race([published, late]);
          clearTimeout(timer);
          assert.notEqual(first, 'late', 'the PUBACK came while the store waited');
          assert.deepEqual(acks, [], 'the acknowledgement waits for the store');
        });
        await eventually(async () => acks.length === 1, 'the acknowledgement once stored');
        assert.deepEqual(acks, [200]);
        assert.equal(await storedCount(key), 1);
      } finally {
        await device.close();
      }
    });

    it('when the credentials are wrong then the connection is refused with CONNACK 5', async () => {
      const pair = await keyPair();
      for (const options of [{ password: 'not the hmac' }, { username: 'z'.repeat(40) }]) {
        await assert.rejects(
          MqttDevice.connect(brokerUrl(), pair, options),
          (error: Error & { code?: number }) => error.code === BAD_LOGIN,
        );
      }
    });

    it('when thousands of messages from many devices are in flight at once then every one is stored and acknowledged', async () => {
      const pair = await keyPair();
      const key = unique('mq');
      const devices = await Promise.all(Array.from({ length: 40 }, () => MqttDevice.connect(brokerUrl(), pair)));
      try {
        assert.equal((await devices[0]?.send('register', { thing_key: key }))?.http_code, 200);
        const perDevice = 150;
        const acks = await Promise.all(
          devices.map(async (device) => {
            const topic = `Altizon/Datonis/${device.clientId}/event`;
            const byHash = new Map<string, string>();
            for (let n = 0; n < perDevice; n++) {
              const payload = device.envelope({ thing_key: key, data: { n } });
              byHash.set((JSON.parse(payload) as { hash: string }).hash, payload);
              device.client.publish(topic, payload, { qos: 1 });
            }
            const codes: number[] = [];
            const busy: string[] = [];
            for (let n = 0; n < perDevice; n++) {
              const ack = await device.nextAck(30_000);
              codes.push(ack.http_code);
              if (ack.http_code === 503) busy.push(ack.context);
            }
            // A server short of time (a loaded machine) may answer 503 "send again", as devices then do:
            // what it refused is sent again, and must then be taken.
            for (const hash of busy) {
              for (let attempt = 0; ; attempt++) {
                device.client.publish(topic, byHash.get(hash) as string, { qos: 1 });
                const again = await device.nextAck(30_000);
                if (again.http_code === 200) break;
                assert.ok(again.http_code === 503 && attempt < 20, JSON.stringify(again));
                await new Promise((resolve) => setTimeout(resolve, 100));
              }
            }
            return codes;
          }),
        );
        assert.ok(
          acks.flat().every((code) => code === 200 || code === 503),
          `every message answered 200, or 503 to send again: ${[...new Set(acks.flat())]}`,
        );
        // Every acknowledged message stored once: none lost, none twice, refused ones included once sent again.
        assert.equal(await storedCount(key), devices.length * perDevice);
      } finally {
        await Promise.all(devices.map((device) => device.close()));
      }
    });

    it('when an MQTT 3.1 client with a 24-character client id connects then it is served', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair(), {
        protocolId: 'MQIsdp',
        protocolVersion: 3,
        clientId: 'c-sdk-client-id-24-chars',
      });
      try {
        const key = unique('mq');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
      } finally {
        await device.close();
      }
    });

    it('when a device publishes under another client id or subscribes to another key pair instructions then it is refused', async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(brokerUrl(), pair);
      const victim = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        await device.send('register', { thing_key: key });
        const text = device.envelope({ thing_key: key, data: { v: 1 } });
        const published = device.client.publishAsync(`Altizon/Datonis/${victim.clientId}/event`, text, { qos: 1 });
        if (MQTT_VERSION === 5) {
          // MQTT 5 says so in the PUBACK.
          await assert.rejects(published, (error: Error & { code?: number }) => error.code === 0x87);
        } else {
          // MQTT 3.1.1 has no refusal of a publish: it is acknowledged, and dropped.
          await published;
        }
        assert.equal(await storedCount(key), 0);
        // No httpAck comes for it: the next is that of the device's next message.
        const next = device.envelope({ thing_key: key, data: { v: 2 } });
        const ack = await device.publishRaw('event', next);
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        assert.equal(ack.context, /"hash":"([0-9a-f]+)"/.exec(next)?.[1], 'the answer of the next message');
        assert.equal(await storedCount(key), 1);
        // A refused subscription comes back as SUBACK 128, which the client reports as an error.
        await assert.rejects(
          device.client.subscribeAsync(`Altizon/Datonis/${victim.accessKey}/thing/+/executeInstruction`, { qos: 2 }),
        );
        await assert.rejects(device.client.subscribeAsync(`Altizon/Datonis/${victim.clientId}/httpAck`, { qos: 1 }));
        const own = await device.client.subscribeAsync(
          `Altizon/Datonis/${pair.access_key}/thing/+/executeInstruction`,
          { qos: 2 },
        );
        assert.equal(own[0]?.qos, 2);
      } finally {
        await device.close();
        await victim.close();
      }
    });

    it('when its key pair is deleted then an open connection ends at its next message, which is answered 401 and not stored', async () => {
      const token = await ctx.api.adminToken();
      const pair = await keyPair();
      const device = await MqttDevice.connect(brokerUrl(), pair);
      try {
        const key = unique('mqdel');
        assert.equal((await device.send('register', { thing_key: key, name: 'Press' })).http_code, 200);
        assert.equal((await device.send('event', { thing_key: key, data: { temperature: 1 } })).http_code, 200);
        const removed = await ctx.api.request('DELETE', `/api/v3/key_pairs/${pair.key_pair_key}`, { token });
        assert.equal(removed.status, 200, removed.text);
        // Over MQTT 5 the device is told why: not authorized.
        let told: number | undefined;
        device.client.once('disconnect', (packet: { reasonCode?: number }) => {
          told = packet.reasonCode;
        });
        const closed = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('the connection stayed open')), 5000);
          device.client.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        const text = device.envelope({ thing_key: key, data: { temperature: 2 } });
        device.client.publish(`Altizon/Datonis/${device.clientId}/event`, text, { qos: 1 });
        // Every publish is answered, this one too, before its connection ends.
        const ack = await device.nextAck();
        assert.equal(ack.http_code, 401);
        assert.equal(ack.http_msg.errors?.[0]?.code, 'unauthorized');
        assert.equal(ack.context, /"hash":"([0-9a-f]+)"/.exec(text)?.[1]);
        await closed;
        assert.equal(told, MQTT_VERSION === 5 ? 0x87 : undefined, 'the DISCONNECT reason code');
        // Anything still under way would be stored within this time.
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(await storedCount(key), 1, 'nothing sent after the deletion is stored');
        await assert.rejects(
          MqttDevice.connect(brokerUrl(), pair),
          (error: Error & { code?: number }) => error.code === BAD_LOGIN,
        );
      } finally {
        device.client.end(true);
      }
    });

    /**
     * A raw connection to the broker that has written `bytes`, after signing in with `pair` when given;
     * `closed` resolves once the broker closes it.
     */
    const rawConnection = async (bytes: Buffer, pair?: { access_key: string; secret_key: string }) => {
      const socket = connect(ctx.api.server.mqttPort as number, '127.0.0.1');
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      if (pair) {
        const connack = new Promise<void>((resolve) => socket.once('data', () => resolve()));
        socket.write(connectPacket(unique('raw'), pair));
        await connack;
      }
      socket.write(bytes);
      return { socket, closed };
    };
    /** 'closed' when the connection is closed within `ms`, else 'open'. */
    const stateAfter = (connection: { closed: Promise<void> }, ms: number) =>
      Promise.race([
        connection.closed.then(() => 'closed'),
        new Promise<string>((resolve) => setTimeout(() => resolve('open'), ms).unref()),
      ]);

    it('when a packet says it is longer than the largest message then its connection is closed before its bytes arrive, and the broker serves on', async () => {
      const pair = await keyPair();
      const bystander = await MqttDevice.connect(brokerUrl(), pair);
      try {
        for (const [what, first, length, signIn] of [
          ['a CONNECT of 1 MiB', 0x10, 1 << 20, false],
          ['a message of 11 MiB', 0x32, 11 << 20, true],
        ] as const) {
          const bytes = Buffer.concat([packetHeader(first, length), Buffer.alloc(64 * 1024, 0x20)]);
          const connection = await rawConnection(bytes, signIn ? pair : undefined);
          assert.equal(await stateAfter(connection, 5000), 'closed', what);
          connection.socket.destroy();
        }
        // A large message under the limit is still taken.
        const key = unique('mq');
        assert.equal((await bystander.send('register', { thing_key: key })).http_code, 200);
        const events = Array.from({ length: 10_000 }, (_, i) => ({
          thing_key: key,
          data: { v: i, note: 'x'.repeat(100) },
        }));
        const bulk = await bystander.send('event', { events });
        assert.equal(bulk.http_code, 200, JSON.stringify(bulk));
        assert.equal(await storedCount(key), 10_000);
      } finally {
        await bystander.close();
      }
    });

    it('when connections hold more bytes of unfinished packets than the broker may then the one that passed the limit is closed, and the others go on', async () => {
      const pair = await keyPair();
      // A signed-in connection that has sent all but 64 KiB of the budget, of a 1 MiB message.
      const slowSender = () =>
        rawConnection(
          Buffer.concat([packetHeader(0x30, 1 << 20), Buffer.alloc(PARTIAL_BYTES - 64 * 1024, 0x20)]),
          pair,
        );
      const first = await slowSender();
      const second = await slowSender();
      try {
        assert.equal(await stateAfter(second, 5000), 'closed', 'the one past the limit');
        assert.equal(await stateAfter(first, 500), 'open', 'the one within it');
        // Once the first one's bytes are gone, a second may hold as many again.
        first.socket.destroy();
        await first.closed;
        const third = await slowSender();
        assert.equal(await stateAfter(third, 500), 'open');
        third.socket.destroy();
      } finally {
        first.socket.destroy();
        second.socket.destroy();
      }
    });

    it('when a device publishes to a topic that is no device topic then it is answered 404 with its hash, and the connection goes on', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        for (const topic of [
          `Altizon/Datonis/${device.clientId}/evnt`,
          `Altizon/Datonis/${device.clientId}/event/x`,
          `Altizon/Datonis/${device.clientId}/httpAck`,
          `Altizon/Datonis/${device.accessKey}/thing/${key}/executeInstruction`,
          'anything/else',
        ]) {
          const text = device.envelope({ thing_key: key, data: { v: 1 } });
          const answered = device.nextAck();
          const published = device.client.publishAsync(topic, text, { qos: 1 });
          // MQTT 5 says "not authorized" in the PUBACK of a publish outside the device's topics.
          if (MQTT_VERSION === 5) {
            await assert.rejects(published, (error: Error & { code?: number }) => error.code === 0x87, topic);
          } else {
            await published;
          }
          const ack = await answered;
          assert.equal(ack.http_code, 404, topic);
          assert.equal(ack.http_msg.errors?.[0]?.code, 'not_found');
          assert.equal(ack.context, /"hash":"([0-9a-f]+)"/.exec(text)?.[1], topic);
        }
        assert.equal((await device.publishRaw('event', 'not json', 'no/such/topic')).context, 'PARSE_ERROR');
        assert.equal(await storedCount(key), 0);
        assert.equal((await device.send('event', { thing_key: key, data: { v: 1 } })).http_code, 200);
        assert.equal(await storedCount(key), 1);
      } finally {
        device.client.end(true);
      }
    });

    it('when a message carries a hash or access_key that is not one string then it is answered 401 and not stored', async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(brokerUrl(), pair);
      const other = await keyPair();
      try {
        const key = unique('mq');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        const signed = JSON.stringify({ thing_key: key, data: { v: 1 } });
        const wrong = '0'.repeat(64);
        for (const text of [
          `${signed.slice(0, -1)},"hash":"${wrong}","hash":"${wrong}","access_key":"${pair.access_key}"}`,
          `${signed.slice(0, -1)},"hash":12345,"access_key":"${pair.access_key}"}`,
          `${signed.slice(0, -1)},"hash":null}`,
          `${signed.slice(0, -1)},"access_key":"${pair.access_key}","access_key":"${other.access_key}"}`,
          `${signed.slice(0, -1)},"access_key":["${pair.access_key}"]}`,
          `${signed.slice(0, -1)},"aliot_protocol_version":1,"aliot_protocol_version":2}`,
        ]) {
          const ack = await device.publishRaw('event', text);
          assert.equal(ack.http_code, 401, text);
          assert.equal(ack.http_msg.errors?.[0]?.code, 'unauthorized');
        }
        assert.equal(await storedCount(key), 0);
        assert.equal((await device.publishRaw('event', signed)).http_code, 200, 'a message without a hash still goes');
      } finally {
        device.client.end(true);
      }
    });

    it('when a payload is longer than the same body over HTTP may be then it is answered 413 with its hash and not stored', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const key = unique('mq');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        const register = device.envelope({ thing_key: key, name: 'x'.repeat(100), note: 'n'.repeat(1024 * 1024) });
        const tooLong = await device.publishRaw('register', register);
        assert.equal(tooLong.http_code, 413);
        assert.equal(tooLong.http_msg.errors?.[0]?.code, 'too_large');
        assert.equal(tooLong.context, /"hash":"([0-9a-f]+)"/.exec(register)?.[1]);
        // An event body one byte over 10 MiB, with its envelope: refused; at 10 MiB with it: stored.
        const eventOf = (size: number) => {
          const base = JSON.stringify({ thing_key: key, data: { v: 1, note: '' } }).length;
          return { thing_key: key, data: { v: 1, note: 'x'.repeat(size - base) } };
        };
        const limit = 10 * 1024 * 1024;
        assert.equal((await device.send('event', eventOf(limit + 1))).http_code, 413);
        assert.equal(await storedCount(key), 0);
        assert.equal((await device.send('event', eventOf(limit))).http_code, 200);
        assert.equal(await storedCount(key), 1);
      } finally {
        device.client.end(true);
      }
    });

    it('when a device publishes to an acknowledgement topic then nothing is delivered, so acks cannot be forged', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair());
      const listener = await MqttDevice.connect(brokerUrl(), await keyPair());
      try {
        const seen: string[] = [];
        listener.client.on('message', (_topic, payload) => seen.push(payload.toString()));
        device.client.publish(`Altizon/Datonis/${listener.clientId}/httpAck`, '{"context":"forged","http_code":200}', {
          qos: 0,
        });
        device.client.publish(`Altizon/Datonis/${device.clientId}/httpAck`, '{"context":"forged","http_code":200}', {
          qos: 0,
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.ok(!seen.some((m) => m.includes('forged')), 'no forged acknowledgement arrived');
      } finally {
        device.client.end(true);
        await listener.close();
      }
      await assert.rejects(
        mqtt.connectAsync(brokerUrl(), { reconnectPeriod: 0, protocolVersion: MQTT_VERSION }),
        (error: Error & { code?: number }) => error.code === BAD_LOGIN,
      );
    });
  },
  {
    env: async () => ({
      MQTT_PORT: String(await freePort()),
      MQTT_MAX_PARTIAL_BYTES: String(PARTIAL_BYTES),
      // The devices of these tests run in the server's own thread: while thousands of their messages
      // are published, the server answers none, which under a slow run (coverage) looks like a store
      // standing still (docs/devices.md, "Overload"; tested in mqtt-overload.test.ts).
      MQTT_MAX_WAIT_MS: '10000',
    }),
  },
);
