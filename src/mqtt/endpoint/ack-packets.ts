/**
 * The packets the device endpoint writes most, made as bytes: a PUBACK for each device message (the
 * same in every version when it succeeds), and the `httpAck` messages answering them (MQTT 3.1, 3.1.1
 * and 5, whose PUBLISH has an empty property list after its packet id). mqtt-packet would make each one
 * a packet object and write it in parts; the bytes are the same.
 */
import type { Ack } from '../signed-messages.ts';

/** A connection's counter of the packet ids of the server's own QoS 1 and 2 messages to it. */
export interface PacketIds {
  _nextId: number;
  /** The ids of its session's messages in flight, which no other message may take meanwhile. */
  taken?: ReadonlyMap<number, unknown> | undefined;
}

/** The PUBACKs of QoS 1 messages with these packet ids, in order, in one buffer. */
export function pubackPackets(ids: readonly number[]): Buffer {
  const buffer = Buffer.allocUnsafe(4 * ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as number;
    buffer[4 * i] = 0x40;
    buffer[4 * i + 1] = 2;
    buffer.writeUInt16BE(id, 4 * i + 2);
  }
  return buffer;
}

/**
 * The connection's next packet id: 1 to 65535, then 1 again, as MQTT clients number theirs, past those
 * in flight (an instruction the device has not acknowledged while 65,535 answers went by keeps its id).
 */
export function nextPacketId(ids: PacketIds): number {
  let id = ids._nextId;
  while (ids.taken?.has(id)) id = id >= 0xffff ? 1 : id + 1;
  ids._nextId = id >= 0xffff ? 1 : id + 1;
  return id;
}

/**
 * Acknowledgements as PUBLISH packets to `topic` at `qos`, in one buffer, for protocol `version` (3, 4
 * or 5). A QoS 1 packet takes the connection's next packet id, so it never collides with another of
 * the server's messages in flight on the connection (instructions take from the same counter); or,
 * with a `tracker`, the id under which a session that outlives the connection keeps the answer until
 * it is acknowledged.
 */
export function ackPackets(
  ids: PacketIds,
  topic: string,
  acks: readonly Ack[],
  qos: 0 | 1,
  version = 4,
  tracker?: { track(payload: string): number },
): Buffer {
  const topicBytes = Buffer.byteLength(topic);
  const propertyBytes = version === 5 ? 1 : 0;
  const payloads = acks.map((ack) => JSON.stringify(ack));
  const sizes = payloads.map((payload) => remainingLength(topicBytes, Buffer.byteLength(payload), qos, version));
  let total = 0;
  for (const size of sizes) total += 1 + lengthBytes(size) + size;
  const buffer = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < payloads.length; i++) {
    buffer[at++] = 0x30 | (qos << 1);
    // The remaining length, seven bits a byte, low bits first; the high bit says another byte follows.
    let remaining = sizes[i] as number;
    do {
      const digit = remaining % 128;
      remaining = Math.floor(remaining / 128);
      buffer[at++] = remaining > 0 ? digit | 0x80 : digit;
    } while (remaining > 0);
    at = buffer.writeUInt16BE(topicBytes, at);
    at += buffer.write(topic, at);
    const payload = payloads[i] as string;
    if (qos) at = buffer.writeUInt16BE(tracker ? tracker.track(payload) : nextPacketId(ids), at);
    if (propertyBytes) buffer[at++] = 0;
    at += buffer.write(payload, at);
  }
  return buffer;
}

/** The length of the PUBLISH packet `ackPackets` makes of one acknowledgement. */
export function ackPacketBytes(topic: string, ack: Ack, qos: 0 | 1, version: number): number {
  const size = remainingLength(Buffer.byteLength(topic), Buffer.byteLength(JSON.stringify(ack)), qos, version);
  return 1 + lengthBytes(size) + size;
}

/**
 * The remaining length of an acknowledgement's PUBLISH: the topic with its length, the packet id at
 * QoS 1, MQTT 5's empty property list, the payload.
 */
const remainingLength = (topicBytes: number, payloadBytes: number, qos: 0 | 1, version: number): number =>
  2 + topicBytes + (qos ? 2 : 0) + (version === 5 ? 1 : 0) + payloadBytes;

/** Bytes of MQTT's variable-length encoding of a remaining length. */
const lengthBytes = (length: number): number => (length < 128 ? 1 : length < 16_384 ? 2 : length < 2_097_152 ? 3 : 4);
