/**
 * A device that publishes many signed messages at once without waiting for their answers, on a
 * thread of its own so that it keeps sending while the test's own thread (and the server in it) is
 * busy. Raw MQTT 3.1.1 packets over a TCP socket: CONNECT, SUBSCRIBE to its httpAck topic, then every
 * PUBLISH at QoS 1 in one go (and, when asked, more a while later); it counts the acknowledgements by
 * their http_code and keeps their contexts.
 */
import { Worker } from 'node:worker_threads';

export interface FloodResult {
  /** Acknowledgements by http_code. */
  codes: Record<string, number>;
  /** Each acknowledgement's context, in the order they came. */
  contexts: string[];
}

const floodThread = `
const { connect } = require('node:net');
const { parentPort, workerData } = require('node:worker_threads');
const { port, clientId, username, password, messages, later } = workerData;
const total = messages.length + (later ? later.messages.length : 0);
const text = (value) => { const b = Buffer.from(value, 'utf8'); const l = Buffer.alloc(2); l.writeUInt16BE(b.length); return Buffer.concat([l, b]); };
const remaining = (n) => { const out = []; do { let byte = n % 128; n = Math.floor(n / 128); if (n > 0) byte |= 0x80; out.push(byte); } while (n > 0); return Buffer.from(out); };
const packet = (type, ...parts) => { const body = Buffer.concat(parts); return Buffer.concat([Buffer.from([type]), remaining(body.length), body]); };
const id = (n) => Buffer.from([n >> 8, n & 0xff]);
const socket = connect(port, '127.0.0.1');
const codes = {};
const contexts = [];
let answered = 0;
let pending = Buffer.alloc(0);
socket.on('data', (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  for (;;) {
    let length = 0, multiplier = 1, i = 1, complete = false;
    while (i < pending.length) { const b = pending[i++]; length += (b & 0x7f) * multiplier; multiplier *= 128; if ((b & 0x80) === 0) { complete = true; break; } }
    if (!complete || i + length > pending.length) break;
    const first = pending[0], type = first & 0xf0, body = pending.subarray(i, i + length);
    pending = pending.subarray(i + length);
    if (type === 0x20) {
      if (body[1] !== 0) { parentPort.postMessage({ t: 'refused', code: body[1] }); socket.destroy(); return; }
      socket.write(packet(0x82, id(1), text('Altizon/Datonis/' + clientId + '/httpAck'), Buffer.from([1])));
    } else if (type === 0x90) {
      const topic = text('Altizon/Datonis/' + clientId + '/event');
      const publish = (batch, from) => socket.write(Buffer.concat(batch.map((m, k) => packet(0x32, topic, id(((from + k) % 65535) + 1), Buffer.from(m, 'utf8')))));
      publish(messages, 0);
      parentPort.postMessage({ t: 'sent' });
      if (later) setTimeout(() => publish(later.messages, messages.length), later.afterMs);
    } else if (type === 0x30) {
      const topicLength = body.readUInt16BE(0);
      const qos1 = (first & 0x06) !== 0;
      if (qos1) socket.write(Buffer.from([0x40, 2, body[2 + topicLength], body[3 + topicLength]]));
      const ack = JSON.parse(body.subarray(2 + topicLength + (qos1 ? 2 : 0)).toString());
      codes[ack.http_code] = (codes[ack.http_code] || 0) + 1;
      contexts.push(ack.context);
      if (++answered === total) { socket.once('close', () => parentPort.postMessage({ t: 'done', codes, contexts })); socket.end(); }
    }
  }
});
socket.on('error', (error) => parentPort.postMessage({ t: 'error', message: error.message }));
socket.write(packet(0x10, text('MQTT'), Buffer.from([4, 0xc2, 0, 60]), text(clientId), text(username), text(password)));
`;

export interface Flood {
  /** Resolves once every message has been written to the socket. */
  sent: Promise<void>;
  /** Resolves once every message has been answered. */
  done: Promise<FloodResult>;
}

export function flood(options: {
  port: number;
  clientId: string;
  username: string;
  password: string;
  messages: string[];
  /** More messages, written `afterMs` after the first ones. */
  later?: { afterMs: number; messages: string[] };
}): Flood {
  const worker = new Worker(floodThread, { eval: true, workerData: options });
  let sent!: () => void;
  const sentPromise = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const done = new Promise<FloodResult>((resolve, reject) => {
    worker.on('message', (message: Partial<FloodResult> & { t: string; code?: number; message?: string }) => {
      if (message.t === 'sent') sent();
      else if (message.t === 'done') resolve({ codes: message.codes ?? {}, contexts: message.contexts ?? [] });
      else reject(new Error(message.t === 'refused' ? `CONNACK ${message.code}` : message.message));
    });
    worker.on('error', reject);
  }).finally(() => void worker.terminate());
  done.catch(() => sent());
  return { sent: sentPromise, done };
}
