/**
 * The fleet benchmark's floor (`npm run bench -- fleet --server floor`): the least a server can do for
 * the device interface's MQTT exchange, on one thread, with none of Thingbase. It answers CONNECT,
 * SUBSCRIBE and PINGREQ; for each QoS 1 message it checks the `hash` (HMAC-SHA256 of the text without
 * its envelope) and parses the JSON, writes the PUBACK on the next turn, stores the message's event
 * in a SQLite transaction per turn (WAL, `synchronous = FULL`, as Thingbase's default durability) and
 * then publishes the QoS 1 acknowledgement on the device's httpAck topic. `FLOOR_STORE=none` skips the
 * store. What this costs on a machine is what any server on Node would spend on the same load there.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { CONNECT, PacketReader, PUBACK, PUBLISH, packet, packetId, SUBACK, SUBSCRIBE, text } from '../mqtt-load.ts';
import { openFloorStore } from './floor-store.ts';

const PINGREQ = 0xc0;
const secret = process.env.FLOOR_SECRET_KEY ?? '';
const useStore = process.env.FLOOR_STORE !== 'none';

const { store, close } = openFloorStore();

interface Device {
  socket: Socket;
  ackTopic: Buffer;
  nextId: number;
}

/** Messages read this turn: the device, its event, the context for its acknowledgement. */
let turn: { device: Device; row: [string, number, string]; context: string; code: number }[] = [];
const pubacks = new Map<Socket, number[]>();

const endTurn = () => {
  for (const [socket, ids] of pubacks) {
    const bytes = Buffer.alloc(ids.length * 4);
    for (const [i, id] of ids.entries()) bytes.set([PUBACK, 2, id >> 8, id & 0xff], i * 4);
    socket.write(bytes);
  }
  pubacks.clear();
  const messages = turn;
  turn = [];
  if (messages.length === 0) return;
  if (useStore) store(messages.map((m) => m.row));
  for (const { device, context, code } of messages) {
    device.nextId = (device.nextId % 0xffff) + 1;
    const payload = Buffer.from(`{"context":"${context}","http_code":${code},"http_msg":{}}`);
    device.socket.write(packet(PUBLISH | 0x02, device.ackTopic, packetId(device.nextId), payload));
  }
};

/** The text as signed: the message without its `hash`, `access_key` and protocol version members. */
const signedText = (raw: string): string => {
  const at = raw.indexOf(',"hash"');
  return at < 0 ? raw : `${raw.slice(0, at)}}`;
};

const onPublish = (device: Device, first: number, body: Buffer) => {
  const topicLength = body.readUInt16BE(0);
  const qos = (first >> 1) & 3;
  const id = qos > 0 ? body.readUInt16BE(2 + topicLength) : 0;
  const payload = body.subarray(2 + topicLength + (qos > 0 ? 2 : 0)).toString('utf8');
  const message = JSON.parse(payload) as { thing_key: string; hash: string; data: unknown; timestamp?: number };
  const expected = createHmac('sha256', secret).update(signedText(payload)).digest('hex');
  const signed = message.hash === expected;
  if (qos > 0) {
    if (turn.length === 0 && pubacks.size === 0) setImmediate(endTurn);
    const ids = pubacks.get(device.socket);
    if (ids) ids.push(id);
    else pubacks.set(device.socket, [id]);
  }
  turn.push({
    device,
    row: [message.thing_key, message.timestamp ?? Date.now(), JSON.stringify(message.data ?? null)],
    context: signed ? message.hash : 'PARSE_ERROR',
    code: signed ? 200 : 401,
  });
};

const server = createServer({ noDelay: true }, (socket) => {
  const reader = new PacketReader();
  let device: Device | undefined;
  socket.on('data', (chunk: Buffer) => {
    for (const [first, body] of reader.read(chunk)) {
      const type = first & 0xf0;
      if (type === CONNECT) {
        const protocolLength = body.readUInt16BE(0);
        const at = 2 + protocolLength + 4;
        const clientId = body.subarray(at + 2, at + 2 + body.readUInt16BE(at)).toString('utf8');
        device = { socket, ackTopic: text(`Altizon/Datonis/${clientId}/httpAck`), nextId: 0 };
        socket.write(Buffer.from([0x20, 2, 0, 0]));
      } else if (type === (SUBSCRIBE & 0xf0)) {
        socket.write(Buffer.from([SUBACK, 3, body[0] as number, body[1] as number, 1]));
      } else if (type === PUBLISH && device) {
        onPublish(device, first, body);
      } else if (type === PINGREQ) {
        socket.write(Buffer.from([0xd0, 0]));
      }
    }
  });
  socket.on('error', () => socket.destroy());
});

server.listen({ port: Number(process.env.MQTT_PORT), host: '127.0.0.1', backlog: 4096 }, () => {
  process.stdout.write(`READY mqtt://127.0.0.1:${process.env.MQTT_PORT}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  close();
  process.exit(0);
});
