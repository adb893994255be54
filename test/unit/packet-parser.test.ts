import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limitPacketLength, PartialPackets, useLeanBuffer } from '../../src/mqtt/endpoint/packet-parser.ts';
import { mqttPacket } from '../support/mqtt-packet.ts';

/** bl's stream is a readable-stream Duplex, not one of node:stream's. */
const isStream = (list: object) => typeof (list as { pipe?: unknown }).pipe === 'function';

const connect = mqttPacket.generate({
  cmd: 'connect',
  protocolId: 'MQTT',
  protocolVersion: 4,
  clean: true,
  keepalive: 120,
  clientId: 'device-0001',
  username: 'access-key',
  password: Buffer.from('a'.repeat(64)),
});
const publish = mqttPacket.generate({
  cmd: 'publish',
  topic: 'Altizon/Datonis/device-0001/event',
  payload: Buffer.from('{"thing_key":"t1"}'),
  qos: 1,
  messageId: 513,
  retain: false,
  dup: false,
});

describe('the broker packet parser: a plain buffer list, the longest packet, the unfinished bytes', () => {
  it('when a new parser gets the plain list then it is no stream, and packets split across reads still parse', () => {
    const parser = mqttPacket.parser();
    assert.equal(isStream(parser._list), true, 'mqtt-packet starts the parser with a stream');
    assert.equal(useLeanBuffer(parser), true);
    assert.equal(isStream(parser._list), false);
    const packets: Record<string, unknown>[] = [];
    parser.on('packet', (packet) => packets.push(packet));
    const bytes = Buffer.concat([connect, publish]);
    // Cut inside the length, the client id, the password and the publish's topic.
    for (const [from, to] of [
      [0, 1],
      [1, 9],
      [9, 30],
      [30, connect.length + 5],
      [connect.length + 5, bytes.length],
    ]) {
      parser.parse(bytes.subarray(from, to));
    }
    assert.deepEqual(
      packets.map((p) => [p.cmd, p.clientId ?? p.topic]),
      [
        ['connect', 'device-0001'],
        ['publish', 'Altizon/Datonis/device-0001/event'],
      ],
    );
    assert.equal(String(packets[0]?.password), 'a'.repeat(64));
    assert.equal(packets[1]?.messageId, 513);
    assert.equal(parser._list.length, 0);
  });

  it('when the parser holds bytes already, or has the plain list, then it is left as it is', () => {
    const holding = mqttPacket.parser();
    holding.parse(connect.subarray(0, 5));
    const list = holding._list;
    assert.equal(useLeanBuffer(holding), false);
    assert.equal(holding._list, list);
    const lean = mqttPacket.parser();
    useLeanBuffer(lean);
    const plain = lean._list;
    assert.equal(useLeanBuffer(lean), false);
    assert.equal(lean._list, plain);
  });

  it('when a packet is longer than the limit then the parser stops with an error at its header, and shorter ones parse', () => {
    const long = mqttPacket.generate({
      cmd: 'publish',
      topic: 'Altizon/Datonis/device-0001/event',
      payload: Buffer.from('x'.repeat(300)),
      qos: 0,
      retain: false,
      dup: false,
    });
    const parser = mqttPacket.parser();
    const packets: Record<string, unknown>[] = [];
    const errors: Error[] = [];
    const refused: number[] = [];
    parser.on('packet', (packet) => packets.push(packet));
    parser.on('error', (error) => errors.push(error));
    limitPacketLength(
      parser,
      () => connect.length,
      (length) => refused.push(length),
    );
    parser.parse(Buffer.concat([connect, publish]));
    assert.deepEqual(
      packets.map((p) => p.cmd),
      ['connect', 'publish'],
    );
    assert.equal(errors.length, 0);
    // Only the header of the long one has arrived: its length is enough to refuse it.
    parser.parse(long.subarray(0, 3));
    assert.equal(packets.length, 2);
    assert.equal(errors.length, 1);
    assert.match(errors[0]?.message ?? '', /over the limit/);
    assert.deepEqual(refused, [long.length - 3]);
  });

  it('when parsers together hold more unfinished bytes than the budget then the one that passed it is refused, unless it holds them all', () => {
    const long = mqttPacket.generate({
      cmd: 'publish',
      topic: 'Altizon/Datonis/device-0001/event',
      payload: Buffer.alloc(1000, 0x20),
      qos: 0,
      retain: false,
      dup: false,
    });
    const partial = new PartialPackets(500);
    const watched = () => {
      const parser = mqttPacket.parser();
      const seen = { packets: 0, errors: 0, refusedAt: [] as number[] };
      parser.on('packet', () => seen.packets++);
      parser.on('error', () => seen.errors++);
      const release = partial.watch(parser, (held) => seen.refusedAt.push(held));
      return { parser, seen, release };
    };
    // A packet's first byte and its length (two bytes here) are consumed as soon as they are read.
    const header = 3;
    const a = watched();
    a.parser.parse(long.subarray(0, 700));
    assert.equal(partial.held, 700 - header, 'one alone may hold more than the budget');
    assert.equal(a.seen.errors, 0);
    const b = watched();
    b.parser.parse(long.subarray(0, 100));
    assert.deepEqual(b.seen.refusedAt, [700 - header + 100 - header]);
    assert.equal(b.seen.errors, 1);
    b.release();
    a.parser.parse(long.subarray(700));
    assert.equal(a.seen.packets, 1);
    assert.equal(partial.held, 0, 'a complete packet holds nothing');
    const c = watched();
    c.parser.parse(long.subarray(0, 400));
    assert.equal(c.seen.errors, 0);
    c.release();
    a.release();
    assert.equal(partial.held, 0);
  });
});
