/**
 * What an HTTP connection may hold (docs/configuration.md, CONNECT_TIMEOUT and HTTP_MAX_CONNECTIONS):
 * - A new connection has CONNECT_TIMEOUT to send its first request (its headers, or a WebSocket
 *   upgrade), TLS handshake included; then it is closed. Node closes a connection whose request's
 *   headers come too slowly, but not one that sends nothing at all: such connections stayed open for
 *   ever, and enough of them took every file descriptor of the process. After a first request, an
 *   idle connection is kept for Node's keep-alive time.
 * - Past HTTP_MAX_CONNECTIONS, or past the socket budget HTTP and MQTT share (core/sockets.ts), a new
 *   connection is closed as soon as it is accepted, and the log says which limit once a minute.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { oncePerMinute } from '../log-limit.ts';
import type { SocketCount, SocketRefusal } from '../sockets.ts';

const firstRequest = Symbol('firstRequest');
type Watched = Socket & { [firstRequest]?: NodeJS.Timeout };

export interface ConnectionLimits {
  /** HTTP connections held at most. */
  maxConnections: number;
  sockets: SocketCount;
  connectTimeoutMs: number;
  /** With TLS, the first request is awaited from the end of the handshake, which has its own timeout. */
  secure: boolean;
  warn: (message: string) => void;
}

/**
 * Applies the limits; answers a function that closes the connections still waiting for their first
 * request, for a stop: Node's own closing of idle connections leaves them open until their timeout,
 * and the stop would wait on them (docs/deployment.md, "Stopping").
 */
export function limitConnections(server: Server, limits: ConnectionLimits): () => void {
  const awaiting = new Set<Watched>();
  const logLimit = oncePerMinute<SocketRefusal>(limits.warn);
  const warn = (refusal: SocketRefusal) =>
    logLimit(
      refusal,
      refusal === 'kind'
        ? `HTTP connections at their limit of ${limits.maxConnections} (HTTP_MAX_CONNECTIONS): closing new ones at once`
        : limits.sockets.pastBudget('closing new HTTP connections at once'),
    );
  const awaitFirstRequest = (socket: Watched) => {
    const timer = setTimeout(() => socket.destroy(), limits.connectTimeoutMs);
    timer.unref();
    socket[firstRequest] = timer;
    awaiting.add(socket);
    socket.once('close', () => {
      clearTimeout(timer);
      awaiting.delete(socket);
    });
  };
  const requested = (request: { socket: Socket }) => {
    const socket = request.socket as Watched;
    const timer = socket[firstRequest];
    if (timer === undefined) return;
    clearTimeout(timer);
    socket[firstRequest] = undefined;
    awaiting.delete(socket);
  };

  server.on('connection', (socket: Watched) => {
    limits.sockets.add('http');
    const refusal = limits.sockets.past('http', limits.maxConnections);
    if (refusal) {
      limits.sockets.release('http');
      socket.destroy();
      return warn(refusal);
    }
    socket.once('close', () => limits.sockets.release('http'));
    if (!limits.secure) awaitFirstRequest(socket);
  });
  if (limits.secure) server.on('secureConnection', awaitFirstRequest);
  server.on('request', requested);
  server.on('upgrade', requested);
  return () => {
    for (const socket of awaiting) socket.destroy();
    awaiting.clear();
  };
}
