/**
 * A property over the device endpoint's packets (docs/devices.md, "The device endpoint"): a
 * connection that sends junk (malformed packets of every type, wrong and huge remaining lengths,
 * truncated packets, packets before CONNECT, a second CONNECT, topic and property junk, MQTT 5
 * properties on an MQTT 3.1.1 connection) is closed or answered, and nothing else happens: a device
 * connected beside it stays connected and is served after every run, and the server never throws (it
 * runs in this process, so a throw would end the suite).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { unique } from '../support/fixtures.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { connectPacket, mqttPacket } from '../support/mqtt-packet.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

const RUNS = Number(process.env.FUZZ_RUNS_PER_OPERATION ?? 60) * 2;

/** Text with the characters topics must not hold, and some they may. */
const junkTopic = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('#', '+', 'Altizon/Datonis/+/event', 'Altizon/Datonis/#', '\u0000', '', '$SYS/x', 'a//b'),
);
const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((a) => Buffer.from(a));

/** Well-formed packets of every type a client or a server sends, as an MQTT 3.1.1 or 5 peer writes them. */
const wellFormed = (pair: KeyPair): fc.Arbitrary<Buffer> =>
  fc
    .tuple(
      fc.constantFrom(4, 5),
      fc.nat(0xffff).map((n) => n + 1),
      junkTopic,
      bytes(64),
      fc.constantFrom(0, 1, 2),
    )
    .chain(([protocolVersion, messageId, topic, payload, qos]) =>
      fc
        .constantFrom<Record<string, unknown>>(
          {
            cmd: 'connect',
            protocolVersion,
            clientId: unique('fz'),
            username: pair.access_key,
            password: Buffer.from(sign(pair.secret_key, pair.access_key)),
            ...(protocolVersion === 5 ? { properties: { sessionExpiryInterval: 10, receiveMaximum: 5 } } : {}),
          },
          { cmd: 'connect', protocolVersion, clientId: '', username: 'x', password: Buffer.from('y') },
          { cmd: 'connack', returnCode: 0, sessionPresent: false },
          {
            cmd: 'publish',
            topic,
            payload,
            qos,
            messageId,
            retain: false,
            dup: false,
            ...(protocolVersion === 5 ? { properties: { topicAlias: 3, userProperties: { a: 'b' } } } : {}),
          },
          { cmd: 'puback', messageId },
          { cmd: 'pubrec', messageId },
          { cmd: 'pubrel', messageId },
          { cmd: 'pubcomp', messageId },
          { cmd: 'subscribe', messageId, subscriptions: [{ topic: topic || 'x', qos }] },
          { cmd: 'suback', messageId, granted: [0] },
          { cmd: 'unsubscribe', messageId, unsubscriptions: [topic || 'x'] },
          { cmd: 'unsuback', messageId },
          { cmd: 'pingreq' },
          { cmd: 'pingresp' },
          { cmd: 'disconnect' },
          ...(protocolVersion === 5 ? [{ cmd: 'auth', reasonCode: 0x18 }] : []),
        )
        .map((packet) => {
          try {
            return mqttPacket.generate({ ...packet }, { protocolVersion }) as Buffer;
          } catch {
            // A topic the writer refuses: a packet of bytes alone, then.
            return Buffer.from([0x30, 0]);
          }
        }),
    );

/** A packet made wrong: truncated, a byte changed, a huge or wrong remaining length, or bytes appended. */
const mangled = (packet: fc.Arbitrary<Buffer>) =>
  fc
    .tuple(packet, fc.nat(), fc.nat(255), fc.constantFrom('truncate', 'flip', 'huge', 'length', 'append'))
    .map(([bytes, at, value, how]) => {
      if (bytes.length === 0) return bytes;
      const i = at % bytes.length;
      switch (how) {
        case 'truncate':
          return bytes.subarray(0, i);
        case 'flip': {
          const copy = Buffer.from(bytes);
          copy[i] = value;
          return copy;
        }
        case 'huge':
          return Buffer.concat([bytes.subarray(0, 1), Buffer.from([0xff, 0xff, 0xff, 0x7f]), bytes.subarray(2)]);
        case 'length':
          return Buffer.concat([bytes.subarray(0, 1), Buffer.from([value & 0x7f]), bytes.subarray(2)]);
        default:
          return Buffer.concat([bytes, Buffer.from([value])]);
      }
    });

describeOnStores(
  'the device endpoint, sent junk packets',
  (ctx) => {
    let pair: KeyPair;
    let bystander: MqttDevice;
    let bystanderClosed = false;
    const thingKey = unique('fuzz');

    before(async () => {
      pair = await createKeyPair(ctx.api, await ctx.api.adminToken());
      bystander = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, pair);
      bystander.client.once('close', () => {
        bystanderClosed = true;
      });
    });
    after(async () => {
      await bystander?.close();
    });

    /** Sends a run's bytes on a fresh connection, signed in first or not, and waits until it is closed or quiet. */
    const sendOnFreshConnection = async (signIn: boolean, chunks: Buffer[]) => {
      const socket = connect(ctx.api.server.mqttPort as number, '127.0.0.1');
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      if (signIn) socket.write(connectPacket(unique('fz'), pair));
      for (const chunk of chunks) socket.write(chunk);
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 100))]);
      socket.destroy();
    };

    it('when a connection sends junk packets then it alone is closed or answered, and a device beside it is served throughout', async () => {
      const packet = wellFormed(pair);
      const junk = fc.array(
        fc.oneof({ weight: 2, arbitrary: packet }, { weight: 3, arbitrary: mangled(packet) }, bytes(32)),
        { minLength: 1, maxLength: 6 },
      );
      let served = 0;
      await fc.assert(
        fc.asyncProperty(fc.boolean(), junk, async (signIn, chunks) => {
          await sendOnFreshConnection(signIn, chunks);
          assert.equal(bystanderClosed, false, 'the device beside it stays connected');
          const ack = await bystander.send('register', { thing_key: thingKey });
          assert.equal(ack.http_code, 200, JSON.stringify(ack));
          served += 1;
        }),
        {
          numRuns: RUNS,
          examples: [
            // A PUBLISH before CONNECT, a huge remaining length, a second CONNECT, v5 properties under v3.1.1.
            [false, [mqttPacket.generate({ cmd: 'pingreq' })]],
            [true, [Buffer.from([0x32, 0xff, 0xff, 0xff, 0x7f])]],
            [true, [connectPacket(unique('fz'), pair)]],
            // A SUBSCRIBE with no subscription in it.
            [true, [Buffer.from([0x82, 2, 0, 1])]],
            [
              true,
              [
                mqttPacket.generate(
                  {
                    cmd: 'publish',
                    topic: 'a',
                    payload: Buffer.from('x'),
                    qos: 1,
                    messageId: 1,
                    retain: false,
                    dup: false,
                    properties: { topicAlias: 1, userProperties: { k: 'v' } },
                  },
                  { protocolVersion: 5 },
                ),
              ],
            ],
          ],
        },
      );
      assert.ok(served >= RUNS, `the device was served after every run (${served})`);
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);
