/**
 * What the device endpoint (docs/devices.md, "The device endpoint") does beyond
 * the MQTT suites it runs too: MQTT 5's CONNACK and topic aliases, MQTT over WebSocket at /mqtt, the
 * protocol's rules on a connection (CONNECT first and once, keep-alive, one connection per client id),
 * and messages refused at once while the store stands still.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { it } from 'node:test';
import { sql } from 'kysely';
import mqtt from 'mqtt';
import WebSocket from 'ws';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { type Ack, MqttDevice, signedEnvelope } from '../support/mqtt-device.ts';
import { connectPacket, mqttPacket, parsePackets, withConnectPropertyBytes } from '../support/mqtt-packet.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { storeEnv } from '../support/stores.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores(
  'the device endpoint',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;
    const keyPair = async () => createKeyPair(ctx.api, await ctx.api.adminToken());

    /** A raw TCP connection; `closed` resolves once the endpoint closes it. */
    const rawConnection = async (protocolVersion = 4) => {
      const socket = connect(ctx.api.server.mqttPort as number, '127.0.0.1');
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const received: Record<string, unknown>[] = [];
      const parser = mqttPacket.parser();
      (parser as unknown as { settings: { protocolVersion: number } }).settings = { protocolVersion };
      parser.on('packet', (packet) => received.push(packet));
      socket.on('data', (chunk) => parser.parse(chunk));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      return { socket, closed, received };
    };
    const closedWithin = (connection: { closed: Promise<void> }, ms: number) =>
      Promise.race([
        connection.closed.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
      ]);

    /** The properties of the CONNACK an MQTT 5 device gets at `url`. */
    const connackProperties = async (url: string) => {
      const pair = await keyPair();
      const client = await mqtt.connectAsync(url, {
        protocolVersion: 5,
        clientId: unique('v5'),
        username: pair.access_key,
        password: sign(pair.secret_key, pair.access_key),
        reconnectPeriod: 0,
      });
      await client.endAsync();
      const connack = (client as unknown as { connackPacket?: { properties?: Record<string, number | boolean> } })
        .connackPacket;
      assert.ok(connack?.properties, 'the CONNACK has properties');
      return connack.properties;
    };
    const webSocketUrl = () => `${ctx.api.url.replace(/^http/, 'ws')}/mqtt`;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    it('when an MQTT 5 device connects then the CONNACK tells it Receive Maximum, Maximum Packet Size and a Topic Alias Maximum', async () => {
      const properties = await connackProperties(brokerUrl());
      assert.ok(Number(properties.receiveMaximum ?? 0) >= 1);
      assert.ok(Number(properties.maximumPacketSize ?? 0) >= 10 * 1024 * 1024);
      assert.ok(Number(properties.topicAliasMaximum ?? 0) >= 1);
      assert.equal(
        properties.subscriptionIdentifiersAvailable,
        false,
        'no subscription identifiers: none would come back on its messages',
      );
    });

    /** An MQTT 5 device with this Receive Maximum, subscribed to its answers at QoS 1. */
    async function answerSubscriber(receiveMaximum: number) {
      const pair = await keyPair();
      const clientId = unique('rm');
      const device = await rawConnection(5);
      device.socket.write(connectPacket(clientId, pair, 60, { protocolVersion: 5, properties: { receiveMaximum } }));
      const ackTopic = `Altizon/Datonis/${clientId}/httpAck`;
      device.socket.write(
        mqttPacket.generate(
          { cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: ackTopic, qos: 1 }] },
          { protocolVersion: 5 },
        ),
      );
      const answers = () => device.received.filter((p) => p.cmd === 'publish' && p.topic === ackTopic);
      await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
      return { pair, clientId, device, answers };
    }

    it('when an MQTT 5 device sets a Receive Maximum then no more of its answers are in flight than it takes, and the rest follow its acknowledgements', async () => {
      const { pair, clientId, device, answers } = await answerSubscriber(2);
      try {
        const key = unique('rm');
        for (let i = 0; i < 5; i++) {
          const text = signedEnvelope(pair, { thing_key: key, timestamp: Date.now() + i });
          device.socket.write(
            mqttPacket.generate(
              { cmd: 'publish', topic: `Altizon/Datonis/${clientId}/register`, payload: text, qos: 0 },
              { protocolVersion: 5 },
            ),
          );
        }
        await eventually(() => answers().length === 2, 'two answers');
        // The three others wait for the device's acknowledgements, however long it takes.
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(answers().length, 2);
        const puback = (messageId: unknown) =>
          device.socket.write(mqttPacket.generate({ cmd: 'puback', messageId }, { protocolVersion: 5 }));
        puback(answers()[0]?.messageId);
        await eventually(() => answers().length === 3, 'a third answer');
        puback(answers()[1]?.messageId);
        puback(answers()[2]?.messageId);
        await eventually(() => answers().length === 5, 'every answer');
        for (const answer of answers()) {
          assert.equal(answer.qos, 1);
          assert.equal(JSON.parse(String(answer.payload)).http_code, 200);
        }
      } finally {
        device.socket.destroy();
      }
    });

    it('when an MQTT 5 device acknowledges a packet id the server sent nothing under then no answer past its Receive Maximum is sent', async () => {
      const { pair, clientId, device, answers } = await answerSubscriber(1);
      try {
        for (let i = 0; i < 2; i++) {
          const text = signedEnvelope(pair, { thing_key: unique('rmx'), timestamp: Date.now() + i });
          device.socket.write(
            mqttPacket.generate(
              { cmd: 'publish', topic: `Altizon/Datonis/${clientId}/register`, payload: text, qos: 0 },
              { protocolVersion: 5 },
            ),
          );
        }
        await eventually(() => answers().length === 1, 'the first answer');
        const sent = Number(answers()[0]?.messageId);
        const unknown = sent === 0xffff ? 1 : sent + 1;
        for (const cmd of ['puback', 'pubcomp'] as const) {
          device.socket.write(mqttPacket.generate({ cmd, messageId: unknown }, { protocolVersion: 5 }));
        }
        // Packets are handled in order and what they make due leaves together: once the PINGRESP is
        // here, an answer the acknowledgements above had let go would be too.
        device.socket.write(mqttPacket.generate({ cmd: 'pingreq' }, { protocolVersion: 5 }));
        await eventually(() => device.received.some((p) => p.cmd === 'pingresp'), 'the PINGRESP');
        assert.equal(answers().length, 1, 'the second answer waits for the first one to be acknowledged');
        device.socket.write(mqttPacket.generate({ cmd: 'puback', messageId: sent }, { protocolVersion: 5 }));
        await eventually(() => answers().length === 2, 'the second answer');
      } finally {
        device.socket.destroy();
      }
    });

    it('when an MQTT 5 device publishes through topic aliases then each message is answered and stored', async () => {
      const device = await MqttDevice.connect(brokerUrl(), await keyPair(), {
        protocolVersion: 5,
        autoUseTopicAlias: true,
        autoAssignTopicAlias: true,
      });
      try {
        const key = unique('alias');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        for (let i = 0; i < 3; i++) {
          assert.equal((await device.send('event', { thing_key: key, data: { v: i } })).http_code, 200);
        }
        assert.equal(await storedEventCount(ctx.api, key), 3);
      } finally {
        await device.close();
      }
    });

    for (const protocolVersion of [4, 5] as const) {
      it(`when a device speaks MQTT ${protocolVersion === 5 ? '5' : '3.1.1'} over WebSocket at /mqtt then it is served as over TCP`, async () => {
        const pair = await keyPair();
        const url = `${ctx.api.url.replace(/^http/, 'ws')}/mqtt`;
        const device = await MqttDevice.connect(url, pair, { protocolVersion });
        try {
          const key = unique('ws');
          assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
          const text = device.envelope({ thing_key: key, data: { v: 1 } });
          const ack = await device.publishRaw('event', text);
          assert.equal(ack.http_code, 200);
          assert.equal(ack.context, /"hash":"([0-9a-f]{64})"/.exec(text)?.[1]);
          assert.equal(await storedEventCount(ctx.api, key), 1);
        } finally {
          await device.close();
        }
        await assert.rejects(
          MqttDevice.connect(url, pair, { protocolVersion, password: 'wrong' }),
          (error: Error & { code?: number }) => error.code === (protocolVersion === 5 ? 0x86 : 5),
        );
        const plain = await ctx.api.request('GET', '/mqtt');
        assert.equal(plain.status, 426, 'a GET without an upgrade is refused');
      });
    }

    it('when an MQTT 5 device connects over WebSocket then its CONNACK gives the same Maximum Packet Size as over TCP', async () => {
      assert.equal(
        (await connackProperties(webSocketUrl())).maximumPacketSize,
        (await connackProperties(brokerUrl())).maximumPacketSize,
      );
    });

    /** A WebSocket to `url` (this suite's /mqtt) offering `protocols`, once open; `closed` resolves with its close code. */
    const openWebSocket = async (protocols?: string[], url = webSocketUrl()) => {
      const ws = new WebSocket(url, protocols);
      ws.on('error', () => {});
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      const received: Record<string, unknown>[] = [];
      ws.on('message', (data: Buffer) => received.push(...parsePackets(data)));
      return { ws, closed, received };
    };

    for (const protocolVersion of [4, 5] as const) {
      it(`when an MQTT ${protocolVersion === 5 ? '5' : '3.1.1'} device over WebSocket sends a bulk of over 128 KiB then it is stored, as over TCP`, async () => {
        const pair = await keyPair();
        const device = await MqttDevice.connect(webSocketUrl(), pair, { protocolVersion });
        try {
          const key = unique('wsbulk');
          assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
          const events = Array.from({ length: 400 }, (_, i) => ({
            thing_key: key,
            data: { i, text: 'x'.repeat(1000) },
          }));
          const text = device.envelope({ events });
          assert.ok(text.length > 256 * 1024);
          const ack = await device.publishRaw('event', text);
          assert.equal(ack.http_code, 200, JSON.stringify(ack));
          assert.equal(await storedEventCount(ctx.api, key), 400);
        } finally {
          device.client.end(true);
        }
      });
    }

    it('when a WebSocket sends a message of over 128 KiB before its CONNECT is answered then it is closed, as over TCP', async () => {
      const { ws, closed } = await openWebSocket(['mqtt']);
      ws.send(Buffer.alloc(200 * 1024));
      assert.equal(await closed, 1009, 'message too big');
    });

    it('when the server runs no MQTT listener of its own then devices are served over WebSocket, and the start message names its address', async () => {
      const server = await serveProcess({ ...storeEnv(ctx.api.storeSettings), MQTT_PORT: '0', LOG_FORMAT: 'json' });
      try {
        const url = `${server.url.replace(/^http/, 'ws')}/mqtt`;
        assert.match(server.output(), new RegExp(`"mqtt":"${url} \\(over WebSocket\\), for devices"`), server.output());
        const device = await MqttDevice.connect(url, await keyPair(), { protocolVersion: 5 });
        try {
          const key = unique('wsonly');
          assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
          assert.equal((await device.send('event', { thing_key: key, data: { v: 1 } })).http_code, 200);
          assert.equal(await storedEventCount(ctx.api, key), 1);
        } finally {
          await device.close();
        }
      } finally {
        await stopProcess(server.child);
      }
    });

    it('when a WebSocket sends a message of over 128 KiB then that is logged at debug with its code and no stack, never as an error', async () => {
      const server = await serveProcess({
        ...storeEnv(ctx.api.storeSettings),
        MQTT_PORT: String(await freePort()),
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'json',
      });
      try {
        const { ws, closed } = await openWebSocket(['mqtt'], `${server.url.replace(/^http/, 'ws')}/mqtt`);
        ws.send(Buffer.alloc(200 * 1024));
        assert.equal(await closed, 1009, 'message too big');
        const lines = () =>
          server
            .output()
            .split('\n')
            .filter((line) => line.includes('Max payload size exceeded'))
            .map((line) => JSON.parse(line) as Record<string, unknown>);
        await eventually(() => lines().length > 0, 'a log line about the message');
        assert.deepEqual(
          lines().filter((line) => Number(line.level) >= 50),
          [],
          'a client sending too much is not a server error',
        );
        const [line] = lines();
        assert.ok(line);
        assert.equal(line.level, 20, server.output());
        assert.equal(line.code, 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH');
        assert.equal(line.url, '/mqtt');
        assert.ok(!JSON.stringify(line).includes('    at '), 'no stack');
      } finally {
        await stopProcess(server.child);
      }
    });

    it('when a WebSocket offers mqtt among other subprotocols then mqtt is chosen; one offering none is served; one offering only others is refused', async () => {
      const pair = await keyPair();
      const among = await openWebSocket(['other', 'mqtt']);
      assert.equal(among.ws.protocol, 'mqtt');
      among.ws.terminate();
      const none = await openWebSocket();
      try {
        assert.equal(none.ws.protocol, '');
        none.ws.send(connectPacket(unique('noproto'), pair));
        await eventually(() => none.received.some((p) => p.cmd === 'connack' && p.returnCode === 0), 'the CONNACK');
      } finally {
        none.ws.terminate();
      }
      await assert.rejects(openWebSocket(['other']), /Unexpected server response: 400/);
      // MQTT 3.1 clients offer mqttv3.1, as mqtt.js does with protocolVersion 3.
      const v31 = await MqttDevice.connect(webSocketUrl(), pair, { protocolVersion: 3, protocolId: 'MQIsdp' });
      try {
        assert.equal((await v31.send('register', { thing_key: unique('v31') })).http_code, 200);
      } finally {
        await v31.close();
      }
    });

    it('when a device over WebSocket sends a text frame then its connection is closed', async () => {
      const pair = await keyPair();
      const clientId = unique('text');
      const { ws, closed, received } = await openWebSocket(['mqtt']);
      ws.send(connectPacket(clientId, pair));
      ws.send(
        mqttPacket.generate({
          cmd: 'subscribe',
          messageId: 1,
          subscriptions: [{ topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 0 }],
        }),
      );
      await eventually(() => received.some((p) => p.cmd === 'suback'), 'the SUBACK');
      // A PUBLISH whose bytes are all ASCII, in a text frame: read, it would be answered 404.
      const publish = mqttPacket.generate({
        cmd: 'publish',
        topic: `Altizon/Datonis/${clientId}/evnt`,
        payload: Buffer.from('x'),
        qos: 0,
        retain: false,
        dup: false,
      });
      ws.send(publish.toString('latin1'));
      const code = await Promise.race([closed, sleep(5000).then(() => 'open')]);
      assert.equal(code, 1003, 'closed: unsupported data');
      assert.equal(received.filter((p) => p.cmd === 'publish').length, 0, 'the text frame was not read');
    });

    it('when a device over WebSocket sends without reading its answers then the server stops reading it, as over TCP', async () => {
      const pair = await keyPair();
      const clientId = unique('wsread');
      const ws = new WebSocket(webSocketUrl(), 'mqtt');
      ws.on('error', () => {});
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      try {
        const connack = new Promise<void>((resolve) => ws.once('message', () => resolve()));
        ws.send(connectPacket(clientId, pair));
        await connack;
        ws.send(
          mqttPacket.generate({
            cmd: 'subscribe',
            messageId: 1,
            subscriptions: [{ topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 0 }],
          }),
        );
        // From now on the device reads nothing: its answers fill the sockets' buffers, then the server's.
        ws.pause();
        // Heartbeats that are no JSON, each answered PARSE_ERROR at once (about four times their size):
        // 24 MB of them, far more than the loopback's buffers hold.
        const one = mqttPacket.generate({
          cmd: 'publish',
          topic: `Altizon/Datonis/${clientId}/heartbeat`,
          payload: Buffer.from('x'),
          qos: 0,
          retain: false,
          dup: false,
        });
        const message = Buffer.concat(Array.from({ length: Math.floor(120_000 / one.length) }, () => one));
        for (let sent = 0; sent < 24_000_000; sent += message.length) ws.send(message);
        // A server that kept reading would take all of it, and hold its answers (about 100 MB) unsent.
        await new Promise((resolve) => setTimeout(resolve, 3000));
        assert.ok(
          ws.bufferedAmount > 4_000_000,
          `the server stopped reading: ${ws.bufferedAmount} bytes are still to be sent`,
        );
      } finally {
        ws.terminate();
      }
    });

    it('when an MQTT 5 device sets a Maximum Packet Size then no answer longer is sent to it', async () => {
      const pair = await keyPair();
      const answered = async (maximumPacketSize: number) => {
        const clientId = unique('maxps');
        const device = await rawConnection(5);
        try {
          device.socket.write(
            connectPacket(clientId, pair, 60, { protocolVersion: 5, properties: { maximumPacketSize } }),
          );
          device.socket.write(
            mqttPacket.generate(
              {
                cmd: 'subscribe',
                messageId: 1,
                subscriptions: [{ topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 1 }],
              },
              { protocolVersion: 5 },
            ),
          );
          await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
          // Not JSON: answered PARSE_ERROR, an answer of about 200 bytes.
          device.socket.write(
            mqttPacket.generate(
              {
                cmd: 'publish',
                topic: `Altizon/Datonis/${clientId}/event`,
                payload: Buffer.from('not json'),
                qos: 1,
                messageId: 2,
                retain: false,
                dup: false,
              },
              { protocolVersion: 5 },
            ),
          );
          await eventually(() => device.received.some((p) => p.cmd === 'puback'), 'the PUBACK');
          // A ping after it: its PINGRESP comes after the answer, if one was sent.
          device.socket.write(mqttPacket.generate({ cmd: 'pingreq' }));
          await eventually(() => device.received.some((p) => p.cmd === 'pingresp'), 'the PINGRESP');
          return device.received.filter((p) => p.cmd === 'publish').length;
        } finally {
          device.socket.destroy();
        }
      };
      assert.equal(await answered(10_000), 1, 'an answer that fits is sent');
      assert.equal(await answered(128), 0, 'one longer than 128 bytes is not');
    });

    it('when an MQTT 5 device publishes at QoS 2 under another client id then its PUBREC says not authorized', async () => {
      const pair = await keyPair();
      const device = await rawConnection(5);
      try {
        device.socket.write(connectPacket(unique('qos2'), pair, 60, { protocolVersion: 5 }));
        await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        device.socket.write(
          mqttPacket.generate(
            {
              cmd: 'publish',
              topic: `Altizon/Datonis/${unique('other')}/event`,
              payload: Buffer.from('{}'),
              qos: 2,
              messageId: 7,
              retain: false,
              dup: false,
            },
            { protocolVersion: 5 },
          ),
        );
        await eventually(() => device.received.some((p) => p.cmd === 'pubrec'), 'the PUBREC');
        const pubrec = device.received.find((p) => p.cmd === 'pubrec');
        assert.equal(pubrec?.messageId, 7);
        assert.equal(pubrec?.reasonCode, 0x87);
      } finally {
        device.socket.destroy();
      }
    });

    it('when a CONNECT names a protocol level the endpoint does not speak, or an MQTT 5 authentication method, then its CONNACK refuses it and the connection closes', async () => {
      const pair = await keyPair();
      const level6 = await rawConnection();
      const connect = connectPacket(unique('lvl'), pair);
      // The protocol level is the byte after the protocol name.
      connect[connect.indexOf('MQTT') + 4] = 6;
      level6.socket.write(connect);
      assert.equal(await closedWithin(level6, 5000), true, 'closed');
      assert.equal(level6.received[0]?.cmd, 'connack');
      assert.equal(level6.received[0]?.returnCode, 1, 'unacceptable protocol version');

      const scram = await rawConnection(5);
      scram.socket.write(
        connectPacket(unique('auth'), pair, 60, {
          protocolVersion: 5,
          properties: { authenticationMethod: 'SCRAM-SHA-1' },
        }),
      );
      assert.equal(await closedWithin(scram, 5000), true, 'closed');
      assert.equal(scram.received[0]?.reasonCode, 0x8c, 'bad authentication method');
    });

    it('when the server closes an MQTT 5 connection (a protocol error, a bad topic alias, a take-over, a silent device) then it tells the device why in a DISCONNECT first', async () => {
      const pair = await keyPair();
      /** The reason code of the DISCONNECT a signed-in device gets once `act` is done, and before it is closed. */
      const toldWhy = async (act: (socket: Socket, clientId: string) => unknown, keepalive = 60) => {
        const clientId = unique('why');
        const device = await rawConnection(5);
        device.socket.write(connectPacket(clientId, pair, keepalive, { protocolVersion: 5 }));
        await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        const other = await act(device.socket, clientId);
        assert.equal(await closedWithin(device, 5000), true, 'closed');
        if (other instanceof MqttDevice) await other.close();
        return device.received.find((p) => p.cmd === 'disconnect')?.reasonCode;
      };
      const secondConnect = (socket: Socket) =>
        socket.write(connectPacket(unique('why'), pair, 60, { protocolVersion: 5 }));
      assert.equal(await toldWhy(secondConnect), 0x82, 'a second CONNECT: protocol error');
      const badAlias = (socket: Socket, clientId: string) =>
        socket.write(
          mqttPacket.generate(
            {
              cmd: 'publish',
              topic: `Altizon/Datonis/${clientId}/event`,
              payload: Buffer.from('{}'),
              qos: 0,
              retain: false,
              dup: false,
              properties: { topicAlias: 1000 },
            },
            { protocolVersion: 5 },
          ),
        );
      assert.equal(await toldWhy(badAlias), 0x94, 'an alias past the maximum: topic alias invalid');
      const takeOver = (_socket: Socket, clientId: string) =>
        MqttDevice.connect(brokerUrl(), pair, { clientId, protocolVersion: 5 });
      assert.equal(await toldWhy(takeOver), 0x8e, 'another connection of the client id: session taken over');
      assert.equal(await toldWhy(() => undefined, 1), 0x8d, 'silent past its keep-alive: keep-alive timeout');
    });

    it('when a packet breaks MQTT’s rules on its properties, a will’s QoS, a DUP flag, an empty topic or its length then that connection alone is closed, told why over MQTT 5', async () => {
      const pair = await keyPair();
      const bystander = await MqttDevice.connect(brokerUrl(), pair);
      try {
        /** The CONNACK's reason code for these CONNECT bytes, once the endpoint has closed the connection. */
        const connackOf = async (bytes: Buffer, protocolVersion = 5) => {
          const device = await rawConnection(protocolVersion);
          device.socket.write(bytes);
          assert.equal(await closedWithin(device, 5000), true, 'closed');
          const connack = device.received.find((p) => p.cmd === 'connack');
          return connack === undefined ? undefined : (connack.reasonCode ?? connack.returnCode);
        };
        const bare = () => connectPacket(unique('props'), pair, 60, { protocolVersion: 5 });
        // Maximum Packet Size given twice (1000, then 2000): no limit the endpoint could keep to.
        const twice = withConnectPropertyBytes(bare(), [0x27, 0, 0, 3, 232, 0x27, 0, 0, 7, 208]);
        assert.equal(await connackOf(twice), 0x82, 'a property twice: protocol error');
        const aliasInConnect = withConnectPropertyBytes(bare(), [0x23, 0, 1]);
        assert.equal(await connackOf(aliasInConnect), 0x81, 'a Topic Alias in a CONNECT: malformed');
        const problemInformation2 = withConnectPropertyBytes(bare(), [0x17, 2]);
        assert.equal(await connackOf(problemInformation2), 0x82, 'a flag of 2: protocol error');
        const trailing = connectPacket(unique('trail'), pair, 60, { protocolVersion: 5 });
        trailing[1] = (trailing[1] as number) + 1;
        assert.equal(
          await connackOf(Buffer.concat([trailing, Buffer.from([0])])),
          undefined,
          'a byte after the CONNECT',
        );
        // mqtt-packet writes no MQTT 3.1 CONNECT without a client id: one of a character, cut out.
        const mqtt31 = mqttPacket.generate(
          {
            cmd: 'connect',
            protocolId: 'MQIsdp',
            protocolVersion: 3,
            clean: true,
            keepalive: 60,
            clientId: 'x',
            username: pair.access_key,
            password: Buffer.from(sign(pair.secret_key, pair.access_key)),
          },
          { protocolVersion: 3 },
        );
        // Fixed header (2 bytes: the packet is under 128), protocol name (8), level, flags, keep-alive (4).
        assert.ok((mqtt31[1] as number) < 128);
        const emptyMqtt31 = Buffer.concat([mqtt31.subarray(0, 14), Buffer.from([0, 0]), mqtt31.subarray(17)]);
        emptyMqtt31[1] = (emptyMqtt31[1] as number) - 1;
        assert.equal(await connackOf(emptyMqtt31, 3), 2, 'an empty client id over MQTT 3.1: identifier rejected');
        const willOfQos3 = (protocolVersion: 4 | 5) => {
          const bytes = connectPacket(unique('will'), pair, 60, { protocolVersion, will: '{}' });
          // The connect flags follow the fixed header, the protocol name (6 bytes) and level (1).
          let flags = 1;
          while ((bytes[flags] as number) & 0x80) flags++;
          flags += 1 + 6 + 1;
          bytes[flags] = (bytes[flags] as number) | 0x18;
          return bytes;
        };
        assert.equal(await connackOf(willOfQos3(5), 5), 0x81, 'a will of QoS 3 over MQTT 5: malformed');
        assert.equal(await connackOf(willOfQos3(4), 4), undefined, 'over MQTT 3.1.1: closed, unanswered');

        /** What a signed-in device is told (MQTT 5) once it sent `bytes`, and that it was closed. */
        const closedFor = async (bytes: (clientId: string) => Buffer, protocolVersion: 4 | 5 = 5) => {
          const clientId = unique('rule');
          const device = await rawConnection(protocolVersion);
          device.socket.write(connectPacket(clientId, pair, 60, { protocolVersion }));
          await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
          device.socket.write(bytes(clientId));
          assert.equal(await closedWithin(device, 5000), true, 'closed');
          return device.received.find((p) => p.cmd === 'disconnect')?.reasonCode;
        };
        const publish = (clientId: string, extra: Record<string, unknown>, protocolVersion = 5) =>
          mqttPacket.generate(
            {
              cmd: 'publish',
              topic: `Altizon/Datonis/${clientId}/event`,
              payload: Buffer.from('{}'),
              qos: 1,
              messageId: 7,
              retain: false,
              dup: false,
              ...extra,
            },
            { protocolVersion },
          );
        const withSubscriptionId = (clientId: string) =>
          publish(clientId, { properties: { subscriptionIdentifier: 3 } });
        assert.equal(await closedFor(withSubscriptionId), 0x82, 'a client’s PUBLISH with a Subscription Identifier');
        const dupAtQos0 = (clientId: string) => publish(clientId, { qos: 0, messageId: undefined, dup: true });
        assert.equal(await closedFor(dupAtQos0), 0x81, 'DUP set on a QoS 0 message: malformed');
        assert.equal(await closedFor(dupAtQos0, 4), undefined, 'over MQTT 3.1.1 too');
        assert.equal(
          await closedFor((clientId) => publish(clientId, { topic: '' }, 4), 4),
          undefined,
          'an empty topic',
        );
        assert.equal(
          await closedFor(() => Buffer.from([0x40, 3, 0, 1, 0]), 4),
          undefined,
          'an MQTT 3.1.1 PUBACK of three bytes',
        );
        assert.equal(await closedFor(() => Buffer.from([0xc0, 1, 0])), 0x81, 'a PINGREQ with a body');

        const key = unique('by');
        assert.equal((await bystander.send('register', { thing_key: key })).http_code, 200, 'the others are served');
      } finally {
        await bystander.close();
      }
    });

    it('when a connection sends a packet before CONNECT, or a second CONNECT, then it alone is closed', async () => {
      const pair = await keyPair();
      const bystander = await MqttDevice.connect(brokerUrl(), pair);
      try {
        const early = await rawConnection();
        early.socket.write(mqttPacket.generate({ cmd: 'pingreq' }));
        assert.equal(await closedWithin(early, 5000), true, 'a PINGREQ before CONNECT');
        const twice = await rawConnection();
        twice.socket.write(connectPacket(unique('raw'), pair));
        await eventually(async () => twice.received.length >= 1, 'the CONNACK');
        twice.socket.write(connectPacket(unique('raw'), pair));
        assert.equal(await closedWithin(twice, 5000), true, 'a second CONNECT');
        const key = unique('by');
        assert.equal((await bystander.send('register', { thing_key: key })).http_code, 200);
      } finally {
        await bystander.close();
      }
    });

    it('when a device goes silent past one and a half times its keep-alive then its connection is closed; one that pings is kept', async () => {
      const pair = await keyPair();
      const silent = await rawConnection();
      silent.socket.write(connectPacket(unique('ka'), pair, 1));
      const pinging = await rawConnection();
      pinging.socket.write(connectPacket(unique('ka'), pair, 1));
      const timer = setInterval(() => pinging.socket.write(mqttPacket.generate({ cmd: 'pingreq' })), 500);
      try {
        assert.equal(await closedWithin(silent, 5000), true, 'the silent one is closed');
        assert.equal(await closedWithin(pinging, 500), false, 'the pinging one stays');
        assert.ok(pinging.received.some((p) => p.cmd === 'pingresp'));
      } finally {
        clearInterval(timer);
        pinging.socket.destroy();
      }
    });

    it('when a device sends bytes but no whole packet past one and a half times its keep-alive then its connection is closed', async () => {
      const pair = await keyPair();
      const trickling = await rawConnection();
      trickling.socket.write(connectPacket(unique('trickle'), pair, 1));
      await eventually(() => trickling.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      const publish = mqttPacket.generate({
        cmd: 'publish',
        topic: 'Altizon/Datonis/trickle/event',
        payload: Buffer.alloc(64),
        qos: 0,
        retain: false,
        dup: false,
      });
      let sent = 0;
      // A byte every 300 ms: the socket is never idle, and no packet ends.
      const timer = setInterval(() => {
        if (sent < publish.length) trickling.socket.write(publish.subarray(sent, ++sent));
      }, 300);
      try {
        assert.equal(await closedWithin(trickling, 4000), true, 'closed after 1.5 s and a byte');
        assert.ok(sent < publish.length, 'while its bytes still came');
      } finally {
        clearInterval(timer);
        trickling.socket.destroy();
      }
    });

    it('when a signed-in device sends a packet MQTT calls malformed or a protocol error then that connection alone is closed', async () => {
      const pair = await keyPair();
      const bystander = await MqttDevice.connect(brokerUrl(), pair);
      /** A PUBLISH with these topic bytes, as any client could write it. */
      const publish = (topic: Buffer, version: number, qos = 0, messageId = 1) => {
        const rest = Buffer.concat([
          Buffer.from([topic.length >> 8, topic.length & 0xff]),
          topic,
          qos > 0 ? Buffer.from([messageId >> 8, messageId & 0xff]) : Buffer.alloc(0),
          version === 5 ? Buffer.from([0]) : Buffer.alloc(0),
          Buffer.from('{}'),
        ]);
        return Buffer.concat([Buffer.from([0x30 | (qos << 1), rest.length]), rest]);
      };
      const subscribe = (filter: string, messageId: number) => {
        const topic = Buffer.from(filter);
        const rest = Buffer.concat([
          Buffer.from([messageId >> 8, messageId & 0xff, topic.length >> 8, topic.length & 0xff]),
          topic,
          Buffer.from([1]),
        ]);
        return Buffer.concat([Buffer.from([0x82, rest.length]), rest]);
      };
      const own = (clientId: string) => `Altizon/Datonis/${clientId}/event`;
      const cases: [string, (clientId: string, version: number) => Buffer][] = [
        ['a topic holding U+0000', (c, v) => publish(Buffer.from(`${own(c)}\0`), v)],
        [
          'a topic of ill-formed UTF-8',
          (c, v) => publish(Buffer.concat([Buffer.from(own(c)), Buffer.from([0xff])]), v),
        ],
        ['a topic name with a wildcard', (c, v) => publish(Buffer.from(`Altizon/Datonis/${c}/#`), v)],
        ['a QoS 1 PUBLISH of packet id 0', (c, v) => publish(Buffer.from(own(c)), v, 1, 0)],
        ['a SUBSCRIBE of packet id 0', (c) => subscribe(`Altizon/Datonis/${c}/httpAck`, 0)],
        ['a filter with # before its last level', () => subscribe('Altizon/#/x', 2)],
        ['a filter with + inside a level', (c) => subscribe(`Altizon/Datonis/${c}+/httpAck`, 3)],
        ['a PINGREQ with a byte after its header', () => Buffer.from([0xc0, 1, 0])],
      ];
      try {
        const closed = await Promise.all(
          cases.flatMap(([what, bytes]) =>
            ([4, 5] as const).map(async (version) => {
              const clientId = unique('bad');
              const connection = await rawConnection(version);
              connection.socket.write(connectPacket(clientId, pair, 60, { protocolVersion: version }));
              await eventually(() => connection.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
              connection.socket.write(bytes(clientId, version));
              const gone = await closedWithin(connection, 5000);
              connection.socket.destroy();
              return gone ? undefined : `${what} over ${version === 5 ? 'MQTT 5' : 'MQTT 3.1.1'}`;
            }),
          ),
        );
        assert.deepEqual(
          closed.filter((left) => left !== undefined),
          [],
          'connections left open',
        );
        const key = unique('by');
        assert.equal((await bystander.send('register', { thing_key: key })).http_code, 200);
      } finally {
        await bystander.close();
      }
    });

    it('when a client id holds /, + or # then its CONNECT is refused as an identifier rejected', async () => {
      const pair = await keyPair();
      for (const clientId of ['gw/1', 'dev+1', 'dev#']) {
        for (const version of [4, 5] as const) {
          const connection = await rawConnection(version);
          connection.socket.write(connectPacket(clientId, pair, 60, { protocolVersion: version }));
          await eventually(() => connection.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
          const connack = connection.received.find((p) => p.cmd === 'connack');
          assert.equal(version === 5 ? connack?.reasonCode : connack?.returnCode, version === 5 ? 0x85 : 2, clientId);
          assert.equal(await closedWithin(connection, 5000), true);
        }
      }
    });

    it('when an MQTT 5 device sends an empty client id then it is given one no device has, not one a device chose', async () => {
      const pair = await keyPair();
      const assignedTo = async () => {
        const connection = await rawConnection(5);
        connection.socket.write(connectPacket('', pair, 60, { protocolVersion: 5 }));
        await eventually(() => connection.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        const connack = connection.received.find((p) => p.cmd === 'connack') as {
          properties?: { assignedClientIdentifier?: string };
        };
        return { connection, id: connack.properties?.assignedClientIdentifier ?? '' };
      };
      const first = await assignedTo();
      // Were ids numbered by connection, the connection after the next would be given this one.
      const numbered = /^tb([0-9a-z]+)$/.exec(first.id);
      const chosenId = numbered ? `tb${(Number.parseInt(numbered[1] as string, 36) + 2).toString(36)}` : unique('tb');
      const chooser = await rawConnection(5);
      chooser.socket.write(connectPacket(chosenId, pair, 60, { protocolVersion: 5 }));
      await eventually(() => chooser.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      const second = await assignedTo();
      try {
        assert.ok(first.id !== '' && second.id !== '' && first.id !== second.id, `${first.id}, ${second.id}`);
        assert.notEqual(second.id, chosenId);
        assert.equal(await closedWithin(chooser, 300), false, 'the device that chose its id keeps its connection');
      } finally {
        for (const connection of [first.connection, second.connection, chooser]) connection.socket.destroy();
      }
    });

    it('when an MQTT 5 device sends PUBREC of a packet id the server never sent then the PUBREL says the id is not found', async () => {
      const pair = await keyPair();
      const device = await rawConnection(5);
      try {
        device.socket.write(connectPacket(unique('pubrec'), pair, 60, { protocolVersion: 5 }));
        await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        device.socket.write(mqttPacket.generate({ cmd: 'pubrec', messageId: 4242 }, { protocolVersion: 5 }));
        await eventually(() => device.received.some((p) => p.cmd === 'pubrel'), 'the PUBREL');
        const pubrel = device.received.find((p) => p.cmd === 'pubrel');
        assert.equal(pubrel?.messageId, 4242);
        assert.equal(pubrel?.reasonCode, 0x92);
      } finally {
        device.socket.destroy();
      }
    });

    it('when an MQTT 5 device sets a Maximum Packet Size shorter than a refusal with its reason then the CONNACK leaves the reason out', async () => {
      const pair = await keyPair();
      const device = await rawConnection(5);
      device.socket.write(
        connectPacket(unique('small'), { ...pair, secret_key: 'wrong' }, 60, {
          protocolVersion: 5,
          properties: { maximumPacketSize: 16 },
        }),
      );
      const bytes: Buffer[] = [];
      device.socket.on('data', (chunk: Buffer) => bytes.push(chunk));
      await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      const connack = device.received.find((p) => p.cmd === 'connack') as { reasonCode?: number; properties?: object };
      assert.equal(connack.reasonCode, 0x86);
      assert.equal(connack.properties, undefined);
      assert.ok(Buffer.concat(bytes).length <= 16);
      device.socket.destroy();
    });

    it('when a PINGREQ comes alone, split in two reads, or as bytes that end a packet begun before then each is read as what it is', async () => {
      const pair = await keyPair();
      const device = await rawConnection();
      const pause = () => new Promise((resolve) => setTimeout(resolve, 50));
      try {
        const clientId = unique('ping');
        device.socket.write(connectPacket(clientId, pair));
        await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        const pings = () => device.received.filter((p) => p.cmd === 'pingresp').length;
        device.socket.write(Buffer.from([0xc0, 0]));
        await eventually(() => pings() === 1, 'a PINGRESP');
        // Its two bytes in two reads.
        device.socket.write(Buffer.from([0xc0]));
        await pause();
        device.socket.write(Buffer.from([0]));
        await eventually(() => pings() === 2, 'a PINGRESP to a PINGREQ read in two parts');
        // A QoS 1 PUBLISH whose last two bytes, read alone, are those of a PINGREQ.
        const publish = mqttPacket.generate({
          cmd: 'publish',
          topic: `Altizon/Datonis/${clientId}/event`,
          payload: Buffer.from([0x7b, 0xc0, 0]),
          qos: 1,
          messageId: 9,
          retain: false,
          dup: false,
        });
        device.socket.write(publish.subarray(0, -2));
        await pause();
        device.socket.write(publish.subarray(-2));
        await eventually(
          () => device.received.some((p) => p.cmd === 'puback' && p.messageId === 9),
          'the PUBACK of the message',
        );
        await pause();
        assert.equal(pings(), 2, "no PINGRESP for a packet's bytes");
        assert.equal(await closedWithin(device, 100), false, 'the connection is still open');
      } finally {
        device.socket.destroy();
      }
    });

    it('when a second connection signs in with a client id already connected then the first is closed and the second served', async () => {
      const pair = await keyPair();
      const clientId = unique('same');
      const first = await MqttDevice.connect(brokerUrl(), pair, { clientId });
      const closed = new Promise<void>((resolve) => first.client.once('close', () => resolve()));
      const second = await MqttDevice.connect(brokerUrl(), pair, { clientId });
      try {
        await closed;
        const key = unique('same');
        assert.equal((await second.send('register', { thing_key: key })).http_code, 200);
      } finally {
        first.client.end(true);
        await second.close();
      }
    });

    /** A thing registered over MQTT, and the signed text of an event of it, as a will carries it. */
    const willOfThing = async (pair: KeyPair, prefix: string) => {
      const key = unique(prefix);
      const registrar = await MqttDevice.connect(brokerUrl(), pair);
      try {
        assert.equal((await registrar.send('register', { thing_key: key })).http_code, 200);
        return { key, text: signedEnvelope(pair, { thing_key: key, data: { gone: 1 } }) };
      } finally {
        await registrar.close();
      }
    };

    it('when the server closes a connection that set a will (keep-alive, a malformed packet, a take-over) then the will is stored as its event', async () => {
      const pair = await keyPair();
      const keepAlive = await willOfThing(pair, 'will-ka');
      const silent = await rawConnection();
      silent.socket.write(connectPacket(unique('will'), pair, 1, { will: keepAlive.text }));
      assert.equal(await closedWithin(silent, 5000), true, 'the silent one is closed');
      await eventually(async () => (await storedEventCount(ctx.api, keepAlive.key)) === 1, 'the will after keep-alive');

      const malformed = await willOfThing(pair, 'will-bad');
      const bad = await rawConnection(5);
      bad.socket.write(connectPacket(unique('will'), pair, 60, { protocolVersion: 5, will: malformed.text }));
      await eventually(() => bad.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      // A PUBLISH of QoS 3, which no MQTT has.
      bad.socket.write(Buffer.from([0x36, 2, 0, 0]));
      assert.equal(await closedWithin(bad, 5000), true, 'the malformed one is closed');
      await eventually(
        async () => (await storedEventCount(ctx.api, malformed.key)) === 1,
        'the will after a bad packet',
      );

      const takeOver = await willOfThing(pair, 'will-take');
      const clientId = unique('will');
      const first = await rawConnection();
      first.socket.write(connectPacket(clientId, pair, 60, { will: takeOver.text }));
      await eventually(() => first.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      const second = await MqttDevice.connect(brokerUrl(), pair, { clientId });
      try {
        assert.equal(await closedWithin(first, 5000), true, 'the first is closed');
        await eventually(
          async () => (await storedEventCount(ctx.api, takeOver.key)) === 1,
          'the will after a take-over',
        );
      } finally {
        await second.close();
      }
    });

    it('when a device that set a will sends DISCONNECT then no will is stored; when it drops the connection the will is stored', async () => {
      const pair = await keyPair();
      const polite = await willOfThing(pair, 'will-bye');
      const leaving = await rawConnection();
      leaving.socket.write(connectPacket(unique('will'), pair, 60, { will: polite.text }));
      await eventually(() => leaving.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      leaving.socket.write(mqttPacket.generate({ cmd: 'disconnect' }));
      assert.equal(await closedWithin(leaving, 5000), true, 'closed after DISCONNECT');

      const dropped = await willOfThing(pair, 'will-drop');
      const dropping = await rawConnection();
      dropping.socket.write(connectPacket(unique('will'), pair, 60, { will: dropped.text }));
      await eventually(() => dropping.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      dropping.socket.destroy();
      await eventually(
        async () => (await storedEventCount(ctx.api, dropped.key)) === 1,
        'the will of a dropped connection',
      );
      // The dropped connection's will was stored after the DISCONNECT was read: the polite one's would be too.
      assert.equal(await storedEventCount(ctx.api, polite.key), 0);
    });

    it('when an MQTT 5 device disconnects with reason 0x04, "with will message", then its will is stored', async () => {
      const pair = await keyPair();
      const will = await willOfThing(pair, 'will-04');
      const device = await rawConnection(5);
      device.socket.write(connectPacket(unique('will'), pair, 60, { protocolVersion: 5, will: will.text }));
      await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      device.socket.write(mqttPacket.generate({ cmd: 'disconnect', reasonCode: 0x04 }, { protocolVersion: 5 }));
      assert.equal(await closedWithin(device, 5000), true, 'closed after DISCONNECT');
      await eventually(async () => (await storedEventCount(ctx.api, will.key)) === 1, 'the will after DISCONNECT 0x04');
    });

    it('when an MQTT 5 CONNECT sets a Receive Maximum or a Maximum Packet Size of 0 then it is refused as a protocol error', async () => {
      const pair = await keyPair();
      for (const properties of [{ receiveMaximum: 0 }, { maximumPacketSize: 0 }]) {
        const device = await rawConnection(5);
        device.socket.write(connectPacket(unique('zero'), pair, 60, { protocolVersion: 5, properties }));
        assert.equal(await closedWithin(device, 5000), true, 'closed');
        assert.equal(device.received[0]?.cmd, 'connack');
        assert.equal(device.received[0]?.reasonCode, 0x82, JSON.stringify(properties));
      }
    });

    it('when an MQTT 5 device asks for what its CONNACK said is not available (a retained will or message, a subscription identifier, a shared subscription) then it is refused with its own reason code', async () => {
      const pair = await keyPair();
      const retainedWill = await rawConnection(5);
      retainedWill.socket.write(
        connectPacket(unique('ret'), pair, 60, { protocolVersion: 5, will: '{}', willRetain: true }),
      );
      assert.equal(await closedWithin(retainedWill, 5000), true, 'closed');
      assert.equal(retainedWill.received[0]?.cmd, 'connack');
      assert.equal(retainedWill.received[0]?.reasonCode, 0x9a, 'a retained will: retain not supported');

      /** The reason code of the DISCONNECT a signed-in MQTT 5 device gets for `packet`. */
      const toldWhy = async (packet: (clientId: string) => Record<string, unknown>) => {
        const clientId = unique('na');
        const device = await rawConnection(5);
        device.socket.write(connectPacket(clientId, pair, 60, { protocolVersion: 5 }));
        await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        device.socket.write(mqttPacket.generate(packet(clientId), { protocolVersion: 5 }));
        assert.equal(await closedWithin(device, 5000), true, 'closed');
        return device.received.find((p) => p.cmd === 'disconnect')?.reasonCode;
      };
      const key = unique('ret');
      const retained = (clientId: string) => ({
        cmd: 'publish',
        topic: `Altizon/Datonis/${clientId}/event`,
        payload: Buffer.from(signedEnvelope(pair, { thing_key: key, data: { v: 1 } })),
        qos: 1,
        messageId: 1,
        retain: true,
        dup: false,
      });
      assert.equal(await toldWhy(retained), 0x9a, 'a retained message: retain not supported');
      const identified = (clientId: string) => ({
        cmd: 'subscribe',
        messageId: 1,
        subscriptions: [{ topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 1 }],
        properties: { subscriptionIdentifier: 7 },
      });
      assert.equal(await toldWhy(identified), 0xa1, 'a subscription identifier: not supported');

      const device = await rawConnection(5);
      try {
        device.socket.write(connectPacket(unique('share'), pair, 60, { protocolVersion: 5 }));
        device.socket.write(
          mqttPacket.generate(
            {
              cmd: 'subscribe',
              messageId: 2,
              subscriptions: [
                { topic: `$share/fleet/Altizon/Datonis/${pair.access_key}/thing/+/executeInstruction`, qos: 1 },
                { topic: 'Altizon/Datonis/+/httpAck', qos: 1 },
              ],
            },
            { protocolVersion: 5 },
          ),
        );
        await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
        const suback = device.received.find((p) => p.cmd === 'suback') as { granted: number[] };
        assert.deepEqual(suback.granted, [0x9e, 0x87], 'shared subscriptions not supported; not authorized');
      } finally {
        device.socket.destroy();
      }
      assert.equal(await storedEventCount(ctx.api, key), 0, 'the retained message was not taken');
    });

    it('when an MQTT 5 device whose session was to end with its connection sets a session expiry at DISCONNECT then it is a protocol error: its will is stored, and its session ends', async () => {
      const pair = await keyPair();
      const will = await willOfThing(pair, 'will-raise');
      const clientId = unique('raise');
      const device = await rawConnection(5);
      device.socket.write(connectPacket(clientId, pair, 60, { protocolVersion: 5, will: will.text }));
      await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
      device.socket.write(
        mqttPacket.generate(
          { cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 3600 } },
          { protocolVersion: 5 },
        ),
      );
      assert.equal(await closedWithin(device, 5000), true, 'closed');
      assert.equal(device.received.find((p) => p.cmd === 'disconnect')?.reasonCode, 0x82, 'protocol error');
      await eventually(
        async () => (await storedEventCount(ctx.api, will.key)) === 1,
        'the will, as for a dropped connection',
      );
      const again = await rawConnection(5);
      try {
        again.socket.write(
          connectPacket(clientId, pair, 60, { protocolVersion: 5, properties: { sessionExpiryInterval: 60 } }),
        );
        await eventually(() => again.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        assert.equal(again.received[0]?.sessionPresent, false, 'no session was kept');
      } finally {
        again.socket.destroy();
      }
    });

    /** A bi-directional thing registered by a device of `pair`, and how to send it instructions and read them. */
    const instructedThing = async (pair: KeyPair) => {
      const token = await ctx.api.adminToken();
      const thingKey = unique('valve');
      const registrar = await MqttDevice.connect(brokerUrl(), pair);
      try {
        const registered = await registrar.send('register', { thing_key: thingKey, bi_directional: true });
        assert.equal(registered.http_code, 200);
      } finally {
        await registrar.close();
      }
      return {
        topic: `Altizon/Datonis/${pair.access_key}/thing/${thingKey}/executeInstruction`,
        send: async () => {
          const sent = await ctx.api.request('POST', `/api/v3/things/${thingKey}/instructions`, {
            token,
            body: { instruction: { name: 'Open', definition: { command: 'open' } } },
          });
          assert.equal(sent.status, 200, sent.text);
          return sent.body.instruction as { instruction_key: string; alert_key: string };
        },
        status: async (instructionKey: string) => {
          const one = await ctx.api.request('GET', `/api/v3/things/${thingKey}/instructions/${instructionKey}`, {
            token,
          });
          return one.body.instruction.status as string;
        },
      };
    };

    it('when a silent device is sent instructions more often than its keep-alive and a half then it is closed all the same, once it has been silent that long', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const device = await rawConnection();
      device.socket.write(connectPacket(unique('quiet'), pair, 2));
      // Its last word: the server reads it after this time, and counts its silence from then. (Taken when
      // the SUBACK is seen, the time came up to a poll and a busy machine's turn later, and the silence
      // measured from it came short of the server's.)
      const spokeAt = Date.now();
      device.socket.write(
        mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: thing.topic, qos: 0 }] }),
      );
      await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
      // Silent for 3 s at most (a keep-alive of 2 s); an instruction every 2.5 s. Each write puts a
      // timeout that counts any activity off by 3 s: the device would be closed, if at all, only when an
      // instruction finds it silent too long (5 s).
      await thing.send();
      const sending = setInterval(() => void thing.send().catch(() => {}), 2500);
      try {
        assert.equal(await closedWithin(device, 8000), true, 'closed while instructions keep coming');
        const silentFor = Date.now() - spokeAt;
        assert.ok(silentFor >= 2900, `closed after ${silentFor} ms, not before its keep-alive and a half`);
        assert.ok(silentFor < 4400, `closed after ${silentFor} ms: its silence ended at 3,000`);
        assert.ok(
          device.received.some((p) => p.cmd === 'publish'),
          'an instruction was written to it while it was silent',
        );
      } finally {
        clearInterval(sending);
      }
    });

    it('when an MQTT 5 device refuses a QoS 1 instruction in its PUBACK then it is not delivered; one it takes is', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const device = await rawConnection(5);
      try {
        device.socket.write(connectPacket(unique('refuse'), pair, 60, { protocolVersion: 5 }));
        device.socket.write(
          mqttPacket.generate(
            { cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: thing.topic, qos: 1 }] },
            { protocolVersion: 5 },
          ),
        );
        await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
        const publishes = () => device.received.filter((p) => p.cmd === 'publish');
        const puback = (messageId: unknown, reasonCode: number) =>
          device.socket.write(mqttPacket.generate({ cmd: 'puback', messageId, reasonCode }, { protocolVersion: 5 }));
        const refused = await thing.send();
        await eventually(() => publishes().length === 1, 'the instruction');
        puback(publishes()[0]?.messageId, 0x80);
        const taken = await thing.send();
        await eventually(() => publishes().length === 2, 'the second instruction');
        puback(publishes()[1]?.messageId, 0);
        await eventually(async () => (await thing.status(taken.instruction_key)) === 'delivered', 'delivered');
        assert.equal(await thing.status(refused.instruction_key), 'pending');
      } finally {
        device.socket.destroy();
      }
    });

    it('when a device answers a QoS 2 instruction with a PUBACK then it is not delivered; its PUBREC and PUBCOMP deliver it', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const device = await rawConnection();
      try {
        device.socket.write(connectPacket(unique('qos2'), pair));
        device.socket.write(
          mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: thing.topic, qos: 2 }] }),
        );
        await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
        const instruction = await thing.send();
        await eventually(() => device.received.some((p) => p.cmd === 'publish'), 'the instruction');
        const messageId = device.received.find((p) => p.cmd === 'publish')?.messageId;
        device.socket.write(mqttPacket.generate({ cmd: 'puback', messageId }));
        // A ping after it: once answered, the PUBACK was read.
        device.socket.write(mqttPacket.generate({ cmd: 'pingreq' }));
        await eventually(() => device.received.some((p) => p.cmd === 'pingresp'), 'the PINGRESP');
        assert.equal(await thing.status(instruction.instruction_key), 'pending');
        device.socket.write(mqttPacket.generate({ cmd: 'pubrec', messageId }));
        await eventually(() => device.received.some((p) => p.cmd === 'pubrel'), 'its PUBREL');
        device.socket.write(mqttPacket.generate({ cmd: 'pubcomp', messageId }));
        await eventually(async () => (await thing.status(instruction.instruction_key)) === 'delivered', 'delivered');
      } finally {
        device.socket.destroy();
      }
    });

    it('when a device in a kept session has more messages in flight than MQTT_SESSION_MAX_MESSAGES then an instruction awaiting its PUBCOMP is kept, and released again when it comes back', async () => {
      const pair = await keyPair();
      const thing = await instructedThing(pair);
      const clientId = unique('trim');
      const subscribe = mqttPacket.generate({
        cmd: 'subscribe',
        messageId: 1,
        subscriptions: [
          { topic: thing.topic, qos: 2 },
          { topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 1 },
        ],
      });
      const first = await rawConnection();
      first.socket.write(connectPacket(clientId, pair, 60, { clean: false }));
      first.socket.write(subscribe);
      await eventually(() => first.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
      const instruction = await thing.send();
      await eventually(() => first.received.some((p) => p.cmd === 'publish'), 'the instruction');
      const messageId = first.received.find((p) => p.cmd === 'publish')?.messageId;
      first.socket.write(mqttPacket.generate({ cmd: 'pubrec', messageId }));
      await eventually(() => first.received.some((p) => p.cmd === 'pubrel'), 'its PUBREL');
      // Answers the device does not acknowledge: more than the session holds (3), with the instruction.
      for (let i = 0; i < 4; i++) {
        first.socket.write(
          mqttPacket.generate({
            cmd: 'publish',
            topic: `Altizon/Datonis/${clientId}/heartbeat`,
            payload: Buffer.from('x'),
            qos: 0,
            retain: false,
            dup: false,
          }),
        );
      }
      await eventually(() => first.received.filter((p) => p.cmd === 'publish').length === 5, 'the answers');
      first.socket.destroy();
      await first.closed;

      const again = await rawConnection();
      try {
        again.socket.write(connectPacket(clientId, pair, 60, { clean: false }));
        await eventually(() => again.received.some((p) => p.cmd === 'pubrel'), 'the PUBREL again');
        assert.equal(again.received.find((p) => p.cmd === 'pubrel')?.messageId, messageId);
        again.socket.write(mqttPacket.generate({ cmd: 'pubcomp', messageId }));
        await eventually(
          async () => (await thing.status(instruction.instruction_key)) === 'delivered',
          'delivered once the device completes its handshake',
        );
      } finally {
        again.socket.destroy();
      }
    });

    /** An MQTT 5 CONNECT of `clientId` with a will to its event topic, delayed `willDelay` s, in a session kept `expiry` s. */
    const connectWithDelayedWill = (clientId: string, pair: KeyPair, will: string, willDelay: number, expiry = 60) =>
      mqttPacket.generate(
        {
          cmd: 'connect',
          protocolId: 'MQTT',
          protocolVersion: 5,
          clean: false,
          keepalive: 60,
          clientId,
          username: pair.access_key,
          password: Buffer.from(sign(pair.secret_key, pair.access_key)),
          properties: { sessionExpiryInterval: expiry },
          will: {
            topic: `Altizon/Datonis/${clientId}/event`,
            payload: Buffer.from(will),
            qos: 1,
            retain: false,
            properties: { willDelayInterval: willDelay },
          },
        },
        { protocolVersion: 5 },
      );

    it('when an MQTT 5 device sets a Will Delay Interval then its will is stored after the delay, or when its session ends, and not when it comes back or is taken over first', async () => {
      const pair = await keyPair();
      /** A device signed in with a delayed will, and the thing its will is an event of. */
      const signedInWithWill = async (prefix: string, willDelay: number, expiry?: number) => {
        const will = await willOfThing(pair, prefix);
        const clientId = unique('delay');
        const device = await rawConnection(5);
        device.socket.write(connectWithDelayedWill(clientId, pair, will.text, willDelay, expiry));
        await eventually(() => device.received.some((p) => p.cmd === 'connack'), 'the CONNACK');
        return { device, clientId, key: will.key };
      };
      const wills = (key: string) => storedEventCount(ctx.api, key);

      const delayed = await signedInWithWill('will-delay', 2);
      const back = await signedInWithWill('will-back', 2);
      const takenOver = await signedInWithWill('will-over', 2);
      const sessionEnds = await signedInWithWill('will-end', 600, 1);
      delayed.device.socket.destroy();
      back.device.socket.destroy();
      sessionEnds.device.socket.destroy();
      const comeBack = await rawConnection(5);
      comeBack.socket.write(connectWithDelayedWill(back.clientId, pair, 'no will', 0));
      const taker = await MqttDevice.connect(brokerUrl(), pair, { clientId: takenOver.clientId, protocolVersion: 5 });
      try {
        assert.equal(await closedWithin(takenOver.device, 5000), true, 'the one taken over is closed');
        await sleep(500);
        assert.equal(await wills(delayed.key), 0, 'not within its delay');
        await eventually(async () => (await wills(delayed.key)) === 1, 'the will once its delay has passed');
        await eventually(async () => (await wills(sessionEnds.key)) === 1, 'the will when its session ends');
        await sleep(500);
        assert.equal(await wills(back.key), 0, 'none for the device that came back within the delay');
        assert.equal(await wills(takenOver.key), 0, 'none for the connection taken over');
      } finally {
        comeBack.socket.destroy();
        await taker.close();
      }
    });

    it('when the server closes a connection whose reads wait for the device to read its answers then it ends all the same', async () => {
      const pair = await keyPair();
      const will = await willOfThing(pair, 'will-drain');
      const clientId = unique('drain');
      const device = await rawConnection();
      device.socket.write(connectPacket(clientId, pair, 0, { will: will.text }));
      device.socket.write(
        mqttPacket.generate({
          cmd: 'subscribe',
          messageId: 1,
          subscriptions: [{ topic: `Altizon/Datonis/${clientId}/httpAck`, qos: 0 }],
        }),
      );
      await eventually(() => device.received.some((p) => p.cmd === 'suback'), 'the SUBACK');
      // From now on the device reads nothing, and sends messages answered at once (not JSON) until the
      // server, its answers unread, stops reading it.
      device.socket.pause();
      const one = mqttPacket.generate({
        cmd: 'publish',
        topic: `Altizon/Datonis/${clientId}/heartbeat`,
        payload: Buffer.from('x'),
        qos: 0,
        retain: false,
        dup: false,
      });
      const chunk = Buffer.concat(Array.from({ length: Math.floor(64_000 / one.length) }, () => one));
      for (let sent = 0; sent < 12_000_000; sent += chunk.length) device.socket.write(chunk);
      await sleep(2000);
      // Taken over: the server closes it. Its end (the will stored) comes though its reads were paused.
      const taker = await MqttDevice.connect(brokerUrl(), pair, { clientId });
      try {
        await eventually(async () => (await storedEventCount(ctx.api, will.key)) === 1, 'the will of its end');
      } finally {
        device.socket.destroy();
        await taker.close();
      }
    });

    it('when the store stands still for four times MQTT_MAX_WAIT_MS then new messages are answered 503 at once, and those taken before are stored once it moves', {
      skip:
        ctx.store.name !== 'postgres' &&
        'holds a lock on PostgreSQL, where the store waits without holding the event loop',
    }, async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(brokerUrl(), pair);
      const key = unique('still');
      try {
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        const answers: Ack[] = [];
        const collect = async (count: number) => {
          while (answers.length < count) answers.push(await device.nextAck(15_000));
        };
        const publish = (i: number) =>
          device.client.publish(
            `Altizon/Datonis/${device.clientId}/event`,
            device.envelope({ thing_key: key, data: { i } }),
            { qos: 1 },
          );
        await ctx.api.server.store.db.transaction().execute(async (tx) => {
          await sql`lock table events in exclusive mode`.execute(tx);
          for (let i = 0; i < 10; i++) publish(i);
          // MQTT_MAX_WAIT_MS is 500: after 2 s without an answer the store is standing still.
          await new Promise((resolve) => setTimeout(resolve, 2500));
          for (let i = 10; i < 20; i++) publish(i);
          await collect(10);
          assert.deepEqual(
            answers.map((a) => a.http_code),
            Array(10).fill(503),
            'the later ten refused while the store stood still',
          );
        });
        await collect(20);
        assert.deepEqual(
          answers.slice(10).map((a) => a.http_code),
          Array(10).fill(200),
        );
        assert.equal(await storedEventCount(ctx.api, key), 10);
      } finally {
        await device.close();
      }
    });
  },
  {
    env: async () => ({
      MQTT_PORT: String(await freePort()),
      MQTT_MAX_PENDING: '50',
      MQTT_MAX_WAIT_MS: '500',
      MQTT_SESSION_MAX_MESSAGES: '3',
    }),
  },
);
