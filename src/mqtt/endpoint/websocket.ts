/**
 * MQTT over WebSocket (docs/devices.md, "The device endpoint"): `GET /mqtt` on the HTTP(S) port, with
 * the WebSocket subprotocol `mqtt`, for devices, gateways and simulators that can only open web
 * sockets. Each binary message carries MQTT bytes (a packet may span messages, or a message hold
 * several); the connection is served by the device endpoint exactly as a TCP one.
 */
import { EventEmitter } from 'node:events';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { ApiError } from '../../core/errors.ts';
import { MAX_WEBSOCKET_MESSAGE_BYTES } from '../../core/http/body.ts';
import type { DeviceSocket } from './connection.ts';

/**
 * Bytes handed to the WebSocket and not yet written out past which the device is taken not to read
 * what it is sent: its connection then reads no more of it until they are (`drain`), as over TCP.
 */
const HIGH_WATER_BYTES = 64 * 1024;

/** A WebSocket as the device endpoint reads and writes a socket. */
export class WebSocketDeviceSocket extends EventEmitter implements DeviceSocket {
  /** A packet sent in one message (as MQTT clients over WebSocket send them) can be no longer. */
  readonly maxMessageBytes = MAX_WEBSOCKET_MESSAGE_BYTES;
  private timer: NodeJS.Timeout | undefined;
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

  constructor(private readonly ws: WebSocket) {
    super();
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      this.restartTimer();
      this.emit('data', Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));
    });
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
    handler: async () => {
      throw new ApiError(426, [{ code: 'invalid', message: 'this endpoint takes WebSocket upgrades only' }]);
    },
    wsHandler: (ws: WebSocket) => {
      const endpoint = accept();
      if (!endpoint) return ws.close(1013, 'the device endpoint is not running');
      endpoint(new WebSocketDeviceSocket(ws));
    },
  });
}
