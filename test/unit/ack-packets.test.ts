import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ackPackets, pubackPackets } from '../../src/mqtt/endpoint/ack-packets.ts';
import type { Ack } from '../../src/mqtt/signed-messages.ts';
import { mqttPacket, parsePackets } from '../support/mqtt-packet.ts';

const parseAll = (bytes: Buffer) => parsePackets(bytes);

const topic = 'Altizon/Datonis/device-0001/httpAck';
const ack = (context: string, message = ''): Ack =>
  message
    ? { context, http_code: 422, http_msg: { errors: [{ code: 'invalid', message }] } }
    : { context, http_code: 200, http_msg: {} };

describe('acknowledgements written as bytes', () => {
  it('when acks of every length class are made then mqtt-packet reads back each topic, id, QoS and payload in order', () => {
    // Remaining lengths of one, two and three bytes (under 128, under 16,384, above).
    const acks = [ack('a'), ack('b', 'x'.repeat(200)), ack('c', 'é'.repeat(9000)), ack('d')];
    const ids = { _nextId: 65534 };
    const packets = parseAll(ackPackets(ids, topic, acks, 1));
    assert.equal(packets.length, 4);
    assert.deepEqual(
      packets.map((p) => p.messageId),
      [65534, 65535, 1, 2],
      'ids run to 65535, then start again at 1, as MQTT clients number theirs',
    );
    assert.equal(ids._nextId, 3);
    // Ids of the session's messages in flight (an instruction not yet acknowledged) are passed over.
    const past = { _nextId: 65535, taken: new Map([1, 2].map((id) => [id, {}])) };
    assert.deepEqual(
      parseAll(ackPackets(past, topic, [ack('e'), ack('f')], 1)).map((p) => p.messageId),
      [65535, 3],
    );
    for (const [i, packet] of packets.entries()) {
      assert.equal(packet.cmd, 'publish');
      assert.equal(packet.topic, topic);
      assert.equal(packet.qos, 1);
      assert.equal(packet.retain, false);
      assert.equal(packet.dup, false);
      assert.deepEqual(JSON.parse((packet.payload as Buffer).toString('utf8')), acks[i]);
    }
  });

  it("when the bytes of one ack are compared with mqtt-packet's own then they are the same", () => {
    const one = ack('5f2c', 'y'.repeat(300));
    for (const qos of [0, 1] as const) {
      const made = ackPackets({ _nextId: 700 }, topic, [one], qos);
      const theirs = mqttPacket.generate({
        cmd: 'publish',
        topic,
        payload: Buffer.from(JSON.stringify(one)),
        qos,
        ...(qos ? { messageId: 700 } : {}),
        retain: false,
        dup: false,
      });
      assert.deepEqual(made, theirs);
    }
  });

  it("when MQTT 5 acks of every length class are made then they are mqtt-packet's own bytes", () => {
    const acks = [ack('a'), ack('b', 'x'.repeat(200)), ack('c', 'é'.repeat(9000))];
    for (const qos of [0, 1] as const) {
      const made = ackPackets({ _nextId: 700 }, topic, acks, qos, 5);
      const theirs = Buffer.concat(
        acks.map((one, i) =>
          mqttPacket.generate(
            {
              cmd: 'publish',
              topic,
              payload: Buffer.from(JSON.stringify(one)),
              qos,
              ...(qos ? { messageId: 700 + i } : {}),
              retain: false,
              dup: false,
            },
            { protocolVersion: 5 },
          ),
        ),
      );
      assert.deepEqual(made, theirs);
    }
  });

  it('when acks go at QoS 0 then they take no packet id', () => {
    const ids = { _nextId: 10 };
    const packets = parseAll(ackPackets(ids, topic, [ack('a'), ack('b')], 0));
    assert.deepEqual(
      packets.map((p) => [p.qos, p.messageId]),
      [
        [0, undefined],
        [0, undefined],
      ],
    );
    assert.equal(ids._nextId, 10);
  });

  it('when PUBACKs are made together then they are the ones mqtt-packet makes, in order', () => {
    const ids = [1, 255, 256, 65535];
    assert.deepEqual(
      pubackPackets(ids),
      Buffer.concat(ids.map((id) => mqttPacket.generate({ cmd: 'puback', messageId: id }))),
    );
    assert.deepEqual(pubackPackets([]), Buffer.alloc(0));
  });
});
