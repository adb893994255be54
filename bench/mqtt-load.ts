/**
 * An MQTT 3.1.1 and 5 load generator light enough not to be the bottleneck on two shared cores: plain TCP
 * sockets, packets encoded once per device, only the few packet types a device needs (CONNECT,
 * SUBSCRIBE, PUBLISH at QoS 1, PUBACK). One mqtt.js client per device costs more CPU than the
 * server spends on each message.
 */
import { connect, type Socket } from 'node:net';

export const CONNECT = 0x10;
export const CONNACK = 0x20;
export const PUBLISH = 0x30;
export const PUBACK = 0x40;
export const SUBSCRIBE = 0x82;
export const SUBACK = 0x90;

function remainingLength(length: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    bytes.push(byte);
  } while (length > 0);
  return Buffer.from(bytes);
}

/**
 * Reads a variable-length integer (a remaining length, a property length) at `at`: its value and
 * where the bytes after it start, or undefined when its last byte has not arrived.
 */
function readVarint(bytes: Buffer, at: number): { value: number; next: number } | undefined {
  let value = 0;
  let multiplier = 1;
  for (let i = at; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * multiplier;
    multiplier *= 128;
    if ((byte & 0x80) === 0) return { value, next: i + 1 };
  }
  return undefined;
}

export const text = (value: string) => {
  const bytes = Buffer.from(value, 'utf8');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length);
  return Buffer.concat([length, bytes]);
};

export const packet = (type: number, ...parts: Buffer[]) => {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([type]), remainingLength(body.length), body]);
};

export const packetId = (id: number) => Buffer.from([id >> 8, id & 0xff]);

/** The protocol level a device speaks: 4 is MQTT 3.1.1, 5 is MQTT 5 (no properties sent). */
export type MqttLevel = 4 | 5;

/** MQTT 5's empty property list, where a packet has one. */
const properties = (level: MqttLevel) => (level === 5 ? Buffer.from([0]) : Buffer.alloc(0));

/** A device's CONNECT (clean session, user name and password). */
export const connectPacket = (
  clientId: string,
  username: string,
  password: string,
  keepAliveSeconds = 60,
  level: MqttLevel = 4,
) =>
  packet(
    CONNECT,
    text('MQTT'),
    Buffer.from([level, 0xc2, 0, keepAliveSeconds]),
    properties(level),
    text(clientId),
    text(username),
    text(password),
  );

/** The SUBSCRIBE (QoS 1) to a device's own acknowledgements, sent once its CONNACK came. */
export const ackSubscription = (clientId: string, level: MqttLevel = 4) =>
  packet(SUBSCRIBE, packetId(1), properties(level), text(`Altizon/Datonis/${clientId}/httpAck`), Buffer.from([1]));

/** A PUBLISH at QoS 1 with packet id 0, and where in it the packet id goes. */
function publishTemplate(topic: string, payload: string, level: MqttLevel): { bytes: Buffer; idAt: number } {
  const bytes = publishPacket(topic, 0, payload, level);
  const idAt = bytes.length - Buffer.byteLength(payload) - 2 - properties(level).length;
  return { bytes, idAt };
}

/**
 * Answers an httpAck received at QoS 1 (topic, packet id, with MQTT 5 its properties, payload) with
 * its PUBACK (MQTT 5's short form: success, no properties); returns the payload.
 */
export function acknowledgeAck(socket: Socket, body: Buffer, level: MqttLevel = 4): Buffer {
  const topicLength = body.readUInt16BE(0);
  socket.write(Buffer.from([PUBACK, 2, body[2 + topicLength] as number, body[3 + topicLength] as number]));
  const at = 4 + topicLength;
  if (level !== 5) return body.subarray(at);
  const properties = readVarint(body, at) as { value: number; next: number };
  return body.subarray(properties.next + properties.value);
}

/** A PUBLISH at QoS 1. */
export const publishPacket = (topic: string, id: number, payload: string, level: MqttLevel = 4) =>
  packet(PUBLISH | 0x02, text(topic), packetId(id), properties(level), Buffer.from(payload, 'utf8'));

/**
 * Connects a device as the SDKs do: CONNECT (3.1.1, user name and password), then once the CONNACK
 * came, SUBSCRIBE to its httpAck. Resolves with the socket once subscribed; every httpAck after that
 * is answered with its PUBACK and its payload handed to `onAck`. A refused CONNACK rejects.
 */
export function connectDevice(
  port: number,
  clientId: string,
  username: string,
  password: string,
  onAck: (payload: Buffer) => void,
  level: MqttLevel = 4,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const reader = new PacketReader();
    socket.on('data', (chunk: Buffer) => {
      for (const [first, body] of reader.read(chunk)) {
        const type = first & 0xf0;
        if (type === CONNACK) {
          if (body[1] !== 0) return reject(new Error(`CONNACK ${body[1]}`));
          socket.write(ackSubscription(clientId, level));
        } else if (type === SUBACK) {
          resolve(socket);
        } else if (type === PUBLISH) {
          onAck(acknowledgeAck(socket, body, level));
        }
      }
    });
    socket.on('error', reject);
    socket.write(connectPacket(clientId, username, password, 60, level));
  });
}

/** Splits a byte stream into MQTT packets: [first byte, body]. */
export class PacketReader {
  private pending: Buffer = Buffer.alloc(0);

  *read(chunk: Buffer): Generator<[number, Buffer]> {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let at = 0;
    for (;;) {
      const length = readVarint(this.pending, at + 1);
      if (!length || length.next + length.value > this.pending.length) break;
      yield [this.pending[at] as number, this.pending.subarray(length.next, length.next + length.value)];
      at = length.next + length.value;
    }
    this.pending = this.pending.subarray(at);
  }
}

export interface MqttLoadResult {
  acknowledged: number;
  refused: number;
  seconds: number;
}

interface LoadDevice {
  clientId: string;
  payload: string;
}

/**
 * Each device keeps `inflight` QoS 1 publishes of its payload outstanding, sending the next one when
 * an httpAck (QoS 1, acknowledged with a PUBACK) arrives, for `duration` seconds; then waits up to
 * 10 s for the acks still due.
 */
export async function mqttLoad(options: {
  port: number;
  username: string;
  password: string;
  devices: LoadDevice[];
  inflight: number;
  duration: number;
  level?: MqttLevel;
}): Promise<MqttLoadResult> {
  const level = options.level ?? 4;
  let acknowledged = 0;
  let refused = 0;
  let outstanding = 0;
  let stopping = false;
  const sockets = await Promise.all(
    options.devices.map(async (device) => {
      const template = publishTemplate(`Altizon/Datonis/${device.clientId}/event`, device.payload, level);
      let nextId = 0;
      const send = () => {
        if (stopping) return;
        nextId = (nextId % 65535) + 1;
        const bytes = Buffer.from(template.bytes);
        bytes.writeUInt16BE(nextId, template.idAt);
        outstanding += 1;
        socket.write(bytes);
      };
      const socket = await connectDevice(
        options.port,
        device.clientId,
        options.username,
        options.password,
        (payload) => {
          outstanding -= 1;
          if (payload.includes('"http_code":200')) acknowledged += 1;
          else refused += 1;
          send();
        },
        level,
      );
      return { socket, send };
    }),
  );
  const started = performance.now();
  for (const { send } of sockets) for (let k = 0; k < options.inflight; k++) send();
  await new Promise((resolve) => setTimeout(resolve, options.duration * 1000));
  stopping = true;
  const deadline = Date.now() + 10_000;
  while (outstanding > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const seconds = (performance.now() - started) / 1000;
  for (const { socket } of sockets) socket.destroy();
  return { acknowledged, refused, seconds };
}
