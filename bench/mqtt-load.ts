/**
 * An MQTT 3.1.1 load generator light enough not to be the bottleneck on two shared cores: plain TCP
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

/** A device's CONNECT (MQTT 3.1.1, clean session, user name and password). */
export const connectPacket = (clientId: string, username: string, password: string, keepAliveSeconds = 60) =>
  packet(
    CONNECT,
    text('MQTT'),
    Buffer.from([4, 0xc2, 0, keepAliveSeconds]),
    text(clientId),
    text(username),
    text(password),
  );

/** The SUBSCRIBE (QoS 1) to a device's own acknowledgements, sent once its CONNACK came. */
export const ackSubscription = (clientId: string) =>
  packet(SUBSCRIBE, packetId(1), text(`Altizon/Datonis/${clientId}/httpAck`), Buffer.from([1]));

/** A PUBLISH at QoS 1 with packet id 0, and where in it the packet id goes. */
function publishTemplate(topic: string, payload: string): { bytes: Buffer; idAt: number } {
  const bytes = publishPacket(topic, 0, payload);
  const idAt = bytes.length - Buffer.byteLength(payload) - 2;
  return { bytes, idAt };
}

/** Answers an httpAck received at QoS 1 (topic, packet id, payload) with its PUBACK; returns the payload. */
export function acknowledgeAck(socket: Socket, body: Buffer): Buffer {
  const topicLength = body.readUInt16BE(0);
  socket.write(Buffer.from([PUBACK, 2, body[2 + topicLength] as number, body[3 + topicLength] as number]));
  return body.subarray(4 + topicLength);
}

/** A PUBLISH at QoS 1. */
export const publishPacket = (topic: string, id: number, payload: string) =>
  packet(PUBLISH | 0x02, text(topic), packetId(id), Buffer.from(payload, 'utf8'));

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
          socket.write(ackSubscription(clientId));
        } else if (type === SUBACK) {
          resolve(socket);
        } else if (type === PUBLISH) {
          onAck(acknowledgeAck(socket, body));
        }
      }
    });
    socket.on('error', reject);
    socket.write(connectPacket(clientId, username, password));
  });
}

/** Splits a byte stream into MQTT packets: [first byte, body]. */
export class PacketReader {
  private pending: Buffer = Buffer.alloc(0);

  *read(chunk: Buffer): Generator<[number, Buffer]> {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let at = 0;
    for (;;) {
      let length = 0;
      let multiplier = 1;
      let i = at + 1;
      let complete = false;
      while (i < this.pending.length) {
        const byte = this.pending[i++] as number;
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        if ((byte & 0x80) === 0) {
          complete = true;
          break;
        }
      }
      if (!complete || i + length > this.pending.length) break;
      yield [this.pending[at] as number, this.pending.subarray(i, i + length)];
      at = i + length;
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
}): Promise<MqttLoadResult> {
  let acknowledged = 0;
  let refused = 0;
  let outstanding = 0;
  let stopping = false;
  const sockets = await Promise.all(
    options.devices.map(async (device) => {
      const template = publishTemplate(`Altizon/Datonis/${device.clientId}/event`, device.payload);
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
