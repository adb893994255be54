import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextPacketId } from '../../src/mqtt/endpoint/ack-packets.ts';
import { instructionPacket } from '../../src/mqtt/endpoint/instructions-out.ts';
import { Outbox, type OutboxTarget, PUBACK_HOLD_MS } from '../../src/mqtt/endpoint/outbox.ts';
import type { Ack } from '../../src/mqtt/signed-messages.ts';
import { parsePackets } from '../support/mqtt-packet.ts';

/** A socket that keeps what is written to it, write by write. */
function recordingTarget(version = 4, ackQos = 1): OutboxTarget & { writes: Buffer[] } {
  const writes: Buffer[] = [];
  return {
    writes,
    socket: { writable: true, write: (bytes: Buffer) => writes.push(bytes) },
    version,
    ids: { _nextId: 1 },
    ackTopic: 'Altizon/Datonis/dev1/httpAck',
    ackQos,
  };
}

const parseAll = parsePackets;

/** An instruction as the endpoint sends it, at QoS 2 under packet id 900. */
const instructionBytes = () =>
  instructionPacket('Altizon/Datonis/ak/thing/t1/executeInstruction', '{"thing_key":"t1"}', 2, 900, 5);

const ok = (context: string): Ack => ({ context, http_code: 200, http_msg: {} });
const turn = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the device endpoint outbox', () => {
  it('when a message is answered before its PUBACK is due then the PUBACK and the answer leave in one write, in that order', async () => {
    const target = recordingTarget();
    const outbox = new Outbox(target);
    outbox.puback(7);
    outbox.puback(8);
    await turn();
    assert.equal(target.writes.length, 0, 'the PUBACKs wait for their answers');
    outbox.ack(ok('h7'));
    outbox.ack(ok('h8'));
    await turn();
    assert.equal(target.writes.length, 1);
    const packets = parseAll(target.writes[0] as Buffer);
    assert.deepEqual(
      packets.map((p) => [p.cmd, p.cmd === 'publish' ? JSON.parse(String(p.payload)).context : p.messageId]),
      [
        ['puback', 7],
        ['puback', 8],
        ['publish', 'h7'],
        ['publish', 'h8'],
      ],
    );
    assert.deepEqual(
      packets.slice(2).map((p) => [p.qos, p.messageId]),
      [
        [1, 1],
        [1, 2],
      ],
      'answers at QoS 1 take the connection packet ids in turn',
    );
  });

  it("when an MQTT 5 device's Receive Maximum is reached then answers and instructions wait for its acknowledgements, in order", async () => {
    const target = recordingTarget(5);
    const outbox = new Outbox(target);
    outbox.limitInFlight(2);
    for (let i = 1; i <= 4; i++) outbox.ack(ok(`h${i}`));
    await turn();
    const contexts = () =>
      target.writes
        .flatMap((bytes) => parsePackets(bytes, 5))
        .filter((p) => p.cmd === 'publish')
        .map((p) => (p.topic === target.ackTopic ? JSON.parse(String(p.payload)).context : p.topic));
    assert.deepEqual(contexts(), ['h1', 'h2']);
    assert.equal(outbox.waiting, 2);
    outbox.publish(instructionBytes());
    assert.equal(outbox.waiting, 3);
    outbox.acknowledged();
    await turn();
    assert.deepEqual(
      contexts(),
      ['h1', 'h2', 'Altizon/Datonis/ak/thing/t1/executeInstruction'],
      'an instruction waiting goes first',
    );
    outbox.acknowledged();
    outbox.acknowledged();
    await turn();
    assert.deepEqual(contexts(), ['h1', 'h2', 'Altizon/Datonis/ak/thing/t1/executeInstruction', 'h3', 'h4']);
    assert.equal(outbox.waiting, 0);
    outbox.ack(ok('h5'));
    await turn();
    assert.equal(contexts().length, 5, 'two are still unacknowledged: h5 waits');
    assert.equal(outbox.discard()?.[0]?.context, 'h5', 'and is handed back when the connection closes');
  });

  it('when the device sets no Receive Maximum (MQTT 3.1.1) then answers leave however many are unacknowledged', async () => {
    const target = recordingTarget(4);
    const outbox = new Outbox(target);
    for (let i = 1; i <= 100; i++) outbox.ack(ok(`h${i}`));
    await turn();
    assert.equal(parsePackets(target.writes[0] as Buffer).length, 100);
    assert.equal(outbox.waiting, 0);
  });

  it('when no answer comes within the hold then the PUBACK leaves alone', async () => {
    const target = recordingTarget();
    const outbox = new Outbox(target);
    outbox.puback(3);
    await sleep(PUBACK_HOLD_MS * 3);
    assert.equal(target.writes.length, 1);
    assert.deepEqual(
      parseAll(target.writes[0] as Buffer).map((p) => [p.cmd, p.messageId]),
      [['puback', 3]],
    );
  });

  it('when other packets are due after held PUBACKs then the PUBACKs go first, keeping the order of the device', async () => {
    const target = recordingTarget();
    const outbox = new Outbox(target);
    outbox.puback(1);
    outbox.packet(Buffer.from([0xd0, 0]));
    outbox.puback(2);
    outbox.ack(ok('a'));
    await turn();
    assert.deepEqual(
      parseAll(Buffer.concat(target.writes)).map((p) => p.cmd),
      ['puback', 'pingresp', 'puback', 'publish'],
    );
  });

  it('when the device has no httpAck subscription then answers are dropped, PUBACKs still sent; at QoS 0 answers carry no id', async () => {
    const none = recordingTarget(4, -1);
    const dropping = new Outbox(none);
    dropping.puback(5);
    dropping.ack(ok('x'));
    await turn();
    assert.deepEqual(
      parseAll(Buffer.concat(none.writes)).map((p) => p.cmd),
      ['puback'],
    );
    const qos0 = recordingTarget(4, 0);
    new Outbox(qos0).ack(ok('y'));
    await turn();
    const [answer] = parseAll(Buffer.concat(qos0.writes));
    assert.equal(answer?.qos, 0);
    assert.equal(answer?.messageId, undefined);
  });

  it('when the connection speaks MQTT 5 then its answers are MQTT 5 PUBLISH packets', async () => {
    const target = recordingTarget(5);
    new Outbox(target).ack(ok('five'));
    await turn();
    const [answer] = parseAll(Buffer.concat(target.writes), 5);
    assert.equal(answer?.cmd, 'publish');
    assert.equal(JSON.parse(String(answer?.payload)).context, 'five');
  });

  it('when the outbox is discarded then nothing it held is written, and the answers not written are handed back for a kept session', async () => {
    const target = recordingTarget();
    const outbox = new Outbox(target);
    outbox.puback(1);
    outbox.ack(ok('z'));
    assert.deepEqual(
      outbox.discard()?.map((ack) => ack.context),
      ['z'],
    );
    await sleep(PUBACK_HOLD_MS * 2);
    assert.equal(target.writes.length, 0);
  });

  it('when answers are kept until acknowledged then each takes its packet id from the session, over MQTT 3.1.1 as over 5', async () => {
    for (const version of [4, 5]) {
      const kept: string[] = [];
      const target = {
        ...recordingTarget(version),
        tracksAnswers: true,
        track: (payload: string) => kept.push(payload) + 100,
      };
      const outbox = new Outbox(target);
      outbox.ack(ok('k1'));
      outbox.ack(ok('k2'));
      await turn();
      const packets = parseAll(Buffer.concat(target.writes), version);
      assert.deepEqual(
        packets.map((p) => p.messageId),
        [101, 102],
      );
      assert.deepEqual(
        kept.map((payload) => JSON.parse(payload).context),
        ['k1', 'k2'],
      );
    }
  });

  it('when packet ids reach 65535 then they start again at 1', () => {
    const ids = { _nextId: 65535 };
    assert.deepEqual([nextPacketId(ids), nextPacketId(ids)], [65535, 1]);
  });
});
