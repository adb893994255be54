/**
 * MQTT over WebSocket (docs/devices.md, "The device endpoint"): `GET /mqtt` on the HTTP(S) port, with
 * the WebSocket subprotocol `mqtt`, for devices, gateways and simulators that can only open web
 * sockets. Each binary message carries MQTT bytes (a packet may span messages, or a message hold
 * several); the connection is served by the device endpoint exactly as a TCP one, with the same
 * limits: packets as long, and the bytes of a message not yet complete counted with the endpoint's
 * unfinished packets (packet-parser.ts).
 */
import { EventEmitter } from 'node:events';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ApiError } from '../../core/errors.ts';
import type { DeviceSocket } from './connection.ts';

/**
 * What the device endpoint reads of the `ws` package's receiver of a socket, which has no public way to
 * say these: the longest message it takes (the WebSocket server's, the same for every route, until a
 * device signs in), and the bytes it holds of a message not yet complete (those of frames not yet
 * whole, and of a fragmented message's frames before its last).
 */
interface WsReceiver {
  _maxPayload: number;
  _bufferedBytes: number;
  _messageLength: number;
}

/** The socket under a WebSocket, whose reads show what its receiver holds. */
interface RawSocket {
  on(event: 'data', listener: () => void): unknown;
}

/** MQTT's subprotocol (MQTT 5 §6), and the one MQTT 3.1 clients offer in its place. */
const SUBPROTOCOLS = ['mqtt', 'mqttv3.1'];

/**
 * Bytes handed to the WebSocket and not yet written out past which the device is taken not to read
 * what it is sent: its connection then reads no more of it until they are (`drain`), as over TCP.
 */
const HIGH_WATER_BYTES = 64 * 1024;

/** A WebSocket as the device endpoint reads and writes a socket. */
export class WebSocketDeviceSocket extends EventEmitter implements DeviceSocket {
  private timer: NodeJS.Timeout | undefined;
  private readonly receiver: WsReceiver;
  /** A frame other than binary came: the connection is being closed, and nothing more is read. */
  private refused = false;
  /** The connection found the writes past HIGH_WATER_BYTES, and waits for `drain`. */
  private needDrain = false;
  /** Called as each write is written out: tells `drain` once what waits is under the mark again. */
  private readonly written = () => {
    // As a TCP socket's timeout, a write that leaves counts as activity: a device reading slowly, whose
    // messages wait unread while its answers drain, is not taken for a silent one.
    this.restartTimer();
    if (this.needDrain && this.ws.bufferedAmount < HIGH_WATER_BYTES) {
      this.needDrain = false;
      this.emit('drain');
    }
  };

  constructor(
    private readonly ws: WebSocket,
    raw: RawSocket,
  ) {
    super();
    this.receiver = (ws as unknown as { _receiver: WsReceiver })._receiver;
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      if (this.refused) return;
      // MQTT travels in binary frames only, and MQTT 5 §6 closes a connection that sends another kind.
      if (!isBinary) {
        this.refused = true;
        return void ws.close(1003, 'MQTT over WebSocket takes binary frames only');
      }
      this.restartTimer();
      this.emit('data', Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));
    });
    // The receiver has read the socket's bytes first (its listener came first): what it holds now of a
    // message not yet complete is told, to be counted as a packet's unfinished bytes are.
    raw.on('data', () => this.emit('held', this.receiver._bufferedBytes + this.receiver._messageLength));
    ws.on('error', (error) => this.emit('error', error));
    ws.once('close', () => {
      clearTimeout(this.timer);
      this.emit('close');
    });
  }

  get writable(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  write(bytes: Buffer): boolean {
    if (this.writable) this.ws.send(bytes, this.written);
    return true;
  }

  get writableNeedDrain(): boolean {
    if (this.ws.bufferedAmount < HIGH_WATER_BYTES) return false;
    this.needDrain = true;
    return true;
  }

  /** Messages as long as `bytes` are taken from now on (the endpoint's packets, once the device has signed in). */
  allowMessages(bytes: number): void {
    this.receiver._maxPayload = Math.max(this.receiver._maxPayload, bytes);
  }

  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    this.ws.resume();
  }

  end(bytes?: Buffer): void {
    if (bytes) this.write(bytes);
    if (this.writable) this.ws.close();
  }

  destroy(): void {
    this.ws.terminate();
  }

  /**
   * Emits `timeout` after `ms` without a message from the device or a write to it leaving (0: never), as
   * a TCP socket does.
   */
  setTimeout(ms: number): void {
    clearTimeout(this.timer);
    this.timer = ms > 0 ? setTimeout(() => this.emit('timeout'), ms) : undefined;
  }

  /** Activity: the timeout starts again (a timer that has fired is armed again, as on TCP). */
  private restartTimer(): void {
    this.timer?.refresh();
  }
}

/** Registers `GET /mqtt`; `accept` is the device endpoint's, once it runs. */
export function registerMqttWebSocketRoute(
  app: FastifyInstance,
  accept: () => ((socket: DeviceSocket) => void) | undefined,
): void {
  app.route({
    method: 'GET',
    url: '/mqtt',
    schema: {
      tags: ['Devices'],
      summary: 'MQTT over WebSocket for devices',
      description:
        'Upgrade to a WebSocket with the subprotocol mqtt, then speak MQTT 3.1.1 or 5 as on MQTT_PORT: ' +
        'the same login, topics and answers (docs/devices.md).',
    },
    onRequest: async (request) => {
      const offered = request.headers['sec-websocket-protocol'];
      if (offered === undefined || request.headers.upgrade?.toLowerCase() !== 'websocket') return;
      const chosen = mqttSubprotocol(offered);
      if (chosen === undefined) {
        throw new ApiError(400, [
          { code: 'invalid', message: `MQTT over WebSocket speaks the subprotocol mqtt, not ${offered}` },
        ]);
      }
      // The WebSocket server answers with the first subprotocol offered: the one chosen is left alone.
      request.raw.headers['sec-websocket-protocol'] = chosen;
    },
    handler: async () => {
      throw new ApiError(426, [{ code: 'invalid', message: 'this endpoint takes WebSocket upgrades only' }]);
    },
    wsHandler: (ws: WebSocket, request: FastifyRequest) => {
      const endpoint = accept();
      if (!endpoint) return ws.close(1013, 'the device endpoint is not running');
      endpoint(new WebSocketDeviceSocket(ws, request.socket));
    },
  });
}

/**
 * The subprotocol a WebSocket offering `offered` (the header's comma-separated list) is answered with:
 * `mqtt`, else `mqttv3.1` (MQTT 3.1 clients, mqtt.js among them with protocolVersion 3), else none
 * (undefined: the upgrade is refused).
 */
export function mqttSubprotocol(offered: string): string | undefined {
  const names = offered.split(',').map((name) => name.trim());
  return SUBPROTOCOLS.find((name) => names.includes(name));
}
