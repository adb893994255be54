import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Packet } from 'mqtt-packet';
import { refusalBeforeLogin } from '../../src/mqtt/endpoint/connack.ts';
import { propertiesFault } from '../../src/mqtt/endpoint/packet-checks.ts';
import {
  DeviceParser,
  type PacketBounds,
  PartialPackets,
  useLeanBuffer,
} from '../../src/mqtt/endpoint/packet-parser.ts';
import { mqttPacket, withConnectPropertyBytes } from '../support/mqtt-packet.ts';

/** bl's stream is a readable-stream Duplex, not one of node:stream's. */
const isStream = (list: object) => typeof (list as { pipe?: unknown }).pipe === 'function';

const connectOf = (protocolVersion: number) =>
  mqttPacket.generate(
    {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion,
      clean: true,
      keepalive: 120,
      clientId: 'device-0001',
      username: 'access-key',
      password: Buffer.from('a'.repeat(64)),
    },
    { protocolVersion },
  );
const connect = connectOf(4);
const publish = mqttPacket.generate({
  cmd: 'publish',
  topic: 'Altizon/Datonis/device-0001/event',
  payload: Buffer.from('{"thing_key":"t1"}'),
  qos: 1,
  messageId: 513,
  retain: false,
  dup: false,
});
const longPublish = (bytes: number) =>
  mqttPacket.generate({
    cmd: 'publish',
    topic: 'Altizon/Datonis/device-0001/event',
    payload: Buffer.alloc(bytes, 0x20),
    qos: 0,
    retain: false,
    dup: false,
  });

/** A parser as a connection has it, with what it was handed and what it refused. */
function reading(bounds: Partial<PacketBounds> = {}) {
  const seen = { packets: [] as Packet[], malformed: 0, refusedLength: [] as number[], refusedHeld: [] as number[] };
  const shared: PacketBounds = {
    maxPacketBytes: 1 << 20,
    maxConnectPacketBytes: 1 << 20,
    partial: new PartialPackets(1 << 20),
    refusedLength: (length) => seen.refusedLength.push(length),
    refusedHeld: (held) => seen.refusedHeld.push(held),
    ...bounds,
  };
  const parser = new DeviceParser(
    {
      parsed: (packet) => seen.packets.push(packet),
      malformed: () => seen.malformed++,
    },
    shared,
  );
  return { parser, seen };
}

describe('the device endpoint packet parser: a plain buffer list, the longest packet, the unfinished bytes', () => {
  it('when a connection gets its parser then its list is no stream, and packets split across reads go to the connection', () => {
    const { parser, seen } = reading();
    assert.equal(isStream(mqttPacket.parser()._list), true, 'mqtt-packet starts a parser with a stream');
    assert.equal(isStream((parser as unknown as { _list: object })._list), false);
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
      // The first byte and the length of a packet are consumed as they are read; the rest is held.
      if (to === connect.length + 5) assert.equal(parser.holdsPartialPacket(), true);
    }
    assert.equal(parser.holdsPartialPacket(), false);
    assert.deepEqual(
      seen.packets.map((p) => [p.cmd, p.cmd === 'connect' ? p.clientId : p.cmd === 'publish' ? p.topic : '']),
      [
        ['connect', 'device-0001'],
        ['publish', 'Altizon/Datonis/device-0001/event'],
      ],
    );
    const [first, second] = seen.packets;
    assert.equal(first?.cmd === 'connect' && String(first.password), 'a'.repeat(64));
    assert.equal(second?.cmd === 'publish' && second.messageId, 513);
    assert.equal(seen.malformed, 0);
  });

  it('when a parser holds bytes already, or has the plain list, then useLeanBuffer leaves it as it is', () => {
    type Lean = Parameters<typeof useLeanBuffer>[0];
    const holding = mqttPacket.parser();
    holding.parse(connect.subarray(0, 5));
    const list = holding._list;
    assert.equal(useLeanBuffer(holding as unknown as Lean), false);
    assert.equal(holding._list, list);
    const lean = mqttPacket.parser() as unknown as Lean;
    assert.equal(useLeanBuffer(lean), true);
    const plain = lean._list;
    assert.equal(useLeanBuffer(lean), false);
    assert.equal(lean._list, plain);
  });

  it('when a packet is longer than the limit then the parser stops at its header; once opened, the longer limit holds', () => {
    const long = longPublish(300);
    // Limits are on the whole packet, its fixed header included (MQTT 5 §3.1.2.11.4).
    const bounds = { maxConnectPacketBytes: connect.length, maxPacketBytes: long.length };
    const before = reading(bounds);
    before.parser.parse(Buffer.concat([connect, publish]));
    assert.deepEqual(
      before.seen.packets.map((p) => p.cmd),
      ['connect', 'publish'],
    );
    assert.equal(before.seen.malformed, 0);
    // Only the header of the long one has arrived: its length is enough to refuse it.
    before.parser.parse(long.subarray(0, 3));
    assert.equal(before.seen.packets.length, 2);
    assert.equal(before.seen.malformed, 1);
    assert.deepEqual(before.seen.refusedLength, [long.length]);

    const after = reading(bounds);
    after.parser.parse(connect);
    after.parser.opened();
    after.parser.parse(long);
    assert.deepEqual(
      after.seen.packets.map((p) => p.cmd),
      ['connect', 'publish'],
    );
    assert.equal(after.seen.malformed, 0);
    after.parser.parse(longPublish(301).subarray(0, 3));
    assert.equal(after.seen.malformed, 1);
    assert.deepEqual(after.seen.refusedLength, [long.length + 1], 'one byte over');
  });

  it('when its connection has opened then the parser keeps of the CONNECT only its protocol version, and still reads MQTT 5', () => {
    const { parser, seen } = reading();
    parser.parse(connectOf(5));
    const settings = () => (parser as unknown as { settings: Record<string, unknown> }).settings;
    assert.equal(settings().password !== undefined, true, 'mqtt-packet keeps the CONNECT as it is');
    parser.opened();
    assert.deepEqual(
      Object.keys(settings()).filter((key) => settings()[key] !== undefined),
      ['protocolVersion'],
    );
    assert.equal(settings().protocolVersion, 5);
    // A property only MQTT 5 has: read as MQTT 3.1.1, the same bytes would be another packet.
    parser.parse(
      mqttPacket.generate(
        {
          cmd: 'publish',
          topic: 'Altizon/Datonis/device-0001/event',
          payload: Buffer.from('{}'),
          qos: 1,
          messageId: 7,
          retain: false,
          dup: false,
          properties: { topicAlias: 3 },
        },
        { protocolVersion: 5 },
      ),
    );
    const last = seen.packets.at(-1);
    assert.equal(last?.cmd === 'publish' && last.properties?.topicAlias, 3);
    assert.equal(seen.malformed, 0);
  });

  it('when parsers together hold more unfinished bytes than the budget then the one that passed it is refused, unless it holds them all', () => {
    const long = longPublish(1000);
    const partial = new PartialPackets(500);
    // A packet's first byte and its length (two bytes here) are consumed as soon as they are read.
    const header = 3;
    const a = reading({ partial });
    a.parser.parse(long.subarray(0, 700));
    assert.equal(partial.held, 700 - header, 'one alone may hold more than the budget');
    assert.equal(a.seen.malformed, 0);
    const b = reading({ partial });
    b.parser.parse(long.subarray(0, 100));
    assert.deepEqual(b.seen.refusedHeld, [700 - header + 100 - header]);
    assert.equal(b.seen.malformed, 1);
    b.parser.release();
    a.parser.parse(long.subarray(700));
    assert.equal(a.seen.packets.length, 1);
    assert.equal(partial.held, 0, 'a complete packet holds nothing');
    const c = reading({ partial });
    c.parser.parse(long.subarray(0, 400));
    assert.equal(c.seen.malformed, 0);
    c.parser.release();
    a.parser.release();
    assert.equal(partial.held, 0);
  });
});

describe('the device endpoint packet parser: PUBLISH, PUBACK and PINGREQ read without mqtt-packet once open', () => {
  /** What a connection reads of a packet: the same whichever way it was read. */
  const seenAs = (packet: Record<string, unknown>) => {
    const { cmd, messageId, reasonCode, properties } = packet;
    const own = { cmd, messageId, reasonCode, properties };
    if (cmd === 'pingreq') return { cmd };
    if (cmd !== 'publish' && cmd !== 'subscribe') return own;
    const { retain, qos, dup, topic, payload, subscriptions } = packet;
    return { ...own, retain, qos, dup, topic, payload: (payload as Buffer | null)?.toString('hex'), subscriptions };
  };
  const text = fc.oneof(fc.string({ maxLength: 40 }), fc.constant('Altizon/Datonis/device-0001/event'));
  const bytes = fc.oneof(
    { weight: 5, arbitrary: fc.uint8Array({ maxLength: 300 }) },
    { weight: 1, arbitrary: fc.integer({ min: 16_000, max: 20_000 }).map((n) => new Uint8Array(n).fill(0x7b)) },
  );
  const id = fc.integer({ min: 1, max: 0xffff });
  const packetOf = (version: number) =>
    fc.oneof(
      fc.record({
        cmd: fc.constant('publish'),
        topic: text,
        payload: bytes.map((b) => Buffer.from(b)),
        qos: fc.constantFrom(0, 1, 2),
        messageId: id,
        retain: fc.boolean(),
        dup: fc.boolean(),
        properties:
          version === 5
            ? fc.option(fc.record({ topicAlias: fc.integer({ min: 1, max: 10 }) }), { nil: undefined })
            : fc.constant(undefined),
      }),
      fc.record({
        cmd: fc.constantFrom('puback', 'pubrec', 'pubrel', 'pubcomp'),
        messageId: id,
        reasonCode: version === 5 ? fc.constantFrom(0, 0x10, 0x80, 0x87) : fc.constant(undefined),
      }),
      fc.constant({ cmd: 'pingreq' }),
      fc.record({
        cmd: fc.constant('subscribe'),
        messageId: id,
        subscriptions: fc.constant([{ topic: 'Altizon/Datonis/device-0001/executeInstruction', qos: 2 }]),
      }),
    );
  // Bytes that may end in a packet cut short, junk, or a length no packet may have.
  const tail = fc.oneof(
    fc.constant(new Uint8Array(0)),
    fc.uint8Array({ minLength: 1, maxLength: 12 }),
    fc.constant(Uint8Array.from([0x32, 0xff, 0xff, 0xff, 0xff])),
  );

  it('when a signed-in device sends any packets in any cuts then the connection reads what mqtt-packet reads, and bytes it refuses are refused', () => {
    const scenario = fc.constantFrom(4, 5).chain((version) =>
      fc.record({
        version: fc.constant(version),
        packets: fc.array(packetOf(version), { minLength: 1, maxLength: 8 }),
        junk: tail,
        seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      }),
    );
    fc.assert(
      fc.property(scenario, ({ version, packets, junk, seed }) => {
        const all = Buffer.concat([
          ...packets.map((p) => mqttPacket.generate(p as Record<string, unknown>, { protocolVersion: version })),
          junk,
        ]);
        // The same parser not yet opened, which reads every packet with mqtt-packet (its length and
        // disconnect checks too), all the bytes at once, up to its first refusal.
        const reference = reading({ maxPacketBytes: 268_435_455, maxConnectPacketBytes: 268_435_455 });
        reference.parser.parse(connectOf(version));
        reference.seen.packets.length = 0;
        reference.parser.parse(all);
        const expected = reference.seen.packets.map((p) => seenAs(p as unknown as Record<string, unknown>));
        const refused = reference.seen.malformed > 0;
        // A connection's parser, opened, the bytes in cuts of the seed's choosing.
        const { parser, seen } = reading({ maxPacketBytes: 268_435_455 });
        parser.parse(connectOf(version));
        parser.opened();
        seen.packets.length = 0;
        let at = 0;
        let cut = seed;
        while (at < all.length && seen.malformed === 0) {
          cut = (cut * 1_103_515_245 + 12_345) % 2 ** 31;
          const size = cut % 4 === 0 ? all.length : 1 + (cut % 97);
          parser.parse(all.subarray(at, at + size));
          at += size;
        }
        assert.deepEqual(
          seen.packets.map((p) => seenAs(p as unknown as Record<string, unknown>)),
          expected,
        );
        assert.equal(seen.malformed > 0, refused);
      }),
      { numRuns: 400 },
    );
  });

  it('when a signed-in device sends a whole QoS 1 message then it is read without mqtt-packet, and before its CONNECT with it', () => {
    const { parser, seen } = reading();
    parser.parse(publish);
    assert.equal(seen.packets.at(-1)?.constructor.name, 'Packet', 'mqtt-packet reads before the connection opens');
    parser.parse(connect);
    parser.opened();
    parser.parse(Buffer.concat([publish, Buffer.from([0x40, 2, 1, 2, 0xc0, 0])]));
    assert.deepEqual(
      seen.packets.slice(-3).map((p) => [p.constructor.name, p.cmd]),
      [
        ['Object', 'publish'],
        ['Object', 'puback'],
        ['Object', 'pingreq'],
      ],
    );
    assert.equal(seen.packets.at(-2)?.cmd === 'puback' && seen.packets.at(-2)?.messageId, 258);
  });

  it("when a read ends right after a packet's fixed header then its body, in the next read, is read as that packet, not as packets of its own", () => {
    const { parser, seen } = reading();
    parser.parse(connect);
    parser.opened();
    seen.packets.length = 0;
    const subscribe = mqttPacket.generate({
      cmd: 'subscribe',
      messageId: 0x8001,
      subscriptions: [{ topic: 'Altizon/Datonis/device-0001/executeInstruction', qos: 2 }],
    });
    // Its fixed header (type and remaining length) alone: mqtt-packet takes those bytes and holds none.
    parser.parse(subscribe.subarray(0, 2));
    assert.equal(parser.holdsPartialPacket(), true, 'a packet is begun');
    // Its body, beginning 0x80 0x01 0x00 0x2e: read alone, a PUBLISH of a wrong topic.
    parser.parse(Buffer.concat([subscribe.subarray(2), Buffer.from([0xc0, 0])]));
    assert.deepEqual(
      seen.packets.map((p) => [p.cmd, p.messageId]),
      [
        ['subscribe', 0x8001],
        ['pingreq', undefined],
      ],
    );
    assert.equal(parser.holdsPartialPacket(), false);
  });
});

describe('the device endpoint packet parser: packets whose fields do not fit their length, flags of other values', () => {
  /** A parser of a connection opened with MQTT `version`, handed `bytes` in one read. */
  const readOpen = (version: number, bytes: Buffer) => {
    const { parser, seen } = reading();
    parser.parse(connectOf(version));
    parser.opened();
    seen.packets.length = 0;
    parser.parse(bytes);
    return seen;
  };
  const ping = Buffer.from([0xc0, 0]);

  it('when a packet is longer or shorter than its fields then the connection is told it is malformed, and the packets before it are read', () => {
    const cases: [string, number, Buffer][] = [
      ['an MQTT 3.1.1 PUBACK of three bytes', 4, Buffer.from([0x40, 3, 0, 1, 0])],
      ['a PINGREQ with a body', 4, Buffer.from([0xc0, 1, 0])],
      ['an MQTT 3.1.1 DISCONNECT with a body', 4, Buffer.from([0xe0, 1, 0])],
      // A filter whose length (16) runs past its packet's 7 bytes, into the PINGREQ after it.
      ['a SUBSCRIBE whose filter runs past it', 4, Buffer.from([0x82, 7, 0, 1, 0, 16, 0x61, 0x62, 0, 0xc0, 0])],
      // A topic of 9 bytes in a PUBLISH of 4.
      ['a PUBLISH whose topic runs past it', 4, Buffer.from([0x30, 4, 0, 9, 0x61, 0x62, 0xc0, 0, 0, 0, 0, 0])],
      ['an MQTT 5 PUBACK with bytes after its properties', 5, Buffer.from([0x40, 5, 0, 1, 0, 0, 9])],
    ];
    for (const [what, version, bytes] of cases) {
      const seen = readOpen(version, Buffer.concat([ping, bytes]));
      assert.equal(seen.malformed, 1, what);
      assert.deepEqual(
        seen.packets.map((p) => p.cmd),
        ['pingreq'],
        `${what}: only the packet before it is read`,
      );
    }
    // Lengths that fit are read as before.
    const fine = readOpen(4, Buffer.from([0x40, 2, 0, 1, 0x62, 2, 0, 2, 0xe0, 0]));
    assert.deepEqual(
      fine.packets.map((p) => p.cmd),
      ['puback', 'pubrel', 'disconnect'],
    );
    assert.equal(fine.malformed, 0);
  });

  it('when a CONNECT has bytes after its payload then it is malformed', () => {
    const { parser, seen } = reading();
    const connect = connectOf(4);
    // One byte more in the remaining length (the packet is under 128 bytes), and the byte.
    const longer = Buffer.concat([connect, Buffer.from([0])]);
    longer[1] = (longer[1] as number) + 1;
    parser.parse(longer);
    assert.equal(seen.malformed, 1);
    assert.equal(seen.packets.length, 0);
  });

  it('when an MQTT 5 DISCONNECT has no reason code and more packets follow in the same read then it is a normal one, with no properties', () => {
    const publish5 = mqttPacket.generate(
      { cmd: 'publish', topic: 'a/b', payload: Buffer.from('x'), qos: 0, retain: false, dup: false },
      { protocolVersion: 5 },
    );
    // mqtt-packet would take the PUBLISH's first byte (0x30) for the reason code.
    const seen = readOpen(5, Buffer.concat([Buffer.from([0xe0, 0]), publish5]));
    assert.equal(seen.malformed, 0);
    const [disconnect, next] = seen.packets;
    assert.equal(disconnect?.cmd, 'disconnect');
    assert.equal(disconnect?.cmd === 'disconnect' && disconnect.reasonCode, 0);
    assert.equal(disconnect?.cmd === 'disconnect' && disconnect.properties, undefined);
    assert.equal(next?.cmd === 'publish' && next.topic, 'a/b');
  });

  it('when an MQTT 5 CONNECT gives a flag a value other than 0 or 1 then it is refused as a protocol error; 0 and 1 are read as before', () => {
    const connect5 = connectOf(5);
    /** The refusal of a CONNECT with these property bytes, as the endpoint reads it. */
    const refusalWith = (properties: number[]) => {
      const { parser, seen } = reading();
      parser.parse(withConnectPropertyBytes(connect5, properties));
      assert.equal(seen.malformed, 0);
      const packet = seen.packets[0] as Parameters<typeof refusalBeforeLogin>[0];
      return refusalBeforeLogin({ ...packet, protocolVersion: 5 });
    };
    // Request Problem Information (0x17) and Request Response Information (0x19).
    assert.equal(refusalWith([0x17, 2]), 'protocolError');
    assert.equal(refusalWith([0x19, 0xff]), 'protocolError');
    assert.equal(refusalWith([0x17, 1]), undefined);
    assert.equal(refusalWith([0x17, 0, 0x19, 1]), undefined);
    // A PUBLISH's Payload Format Indicator (0x01) of 2, read as a signed-in device's packet is.
    const seen = readOpen(5, Buffer.from([0x30, 6, 0, 1, 0x61, 2, 0x01, 2]));
    const [publish5] = seen.packets;
    assert.equal(publish5?.cmd, 'publish');
    assert.equal(
      propertiesFault('publish', publish5?.cmd === 'publish' ? publish5.properties : undefined),
      'protocolError',
    );
    assert.equal(propertiesFault('publish', { payloadFormatIndicator: true }), undefined);
  });

  it('when an MQTT 3.1 CONNECT has an empty client id then it is refused as an identifier MQTT 3.1 does not allow', () => {
    const connect = { clientId: '', username: 'ak', password: Buffer.from('p'), clean: true };
    assert.equal(refusalBeforeLogin({ ...connect, protocolVersion: 3 }), 'identifier');
    assert.equal(refusalBeforeLogin({ ...connect, protocolVersion: 4 }), undefined);
  });
});
