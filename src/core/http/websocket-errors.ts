/**
 * What becomes of an error on an established WebSocket (MQTT over WebSocket at /mqtt, the realtime
 * socket): the socket is ended either way. An error the client caused (a message over the size limit,
 * a broken frame, a connection dropped without a close) is logged at debug, its code and message
 * without a stack: by then ws has already sent the client its close code (1009 for a message too big,
 * 1002 for a broken frame). Any other error is the server's own and is logged as one
 * (docs/operations.md, "Logs").
 */
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { redactSecretParams } from '../urls.ts';

/** A peer that went away mid-stream: reset, or gone while it was written to. */
const PEER_GONE = new Set(['ECONNRESET', 'EPIPE']);

/** The error's code when the client caused it: ws's WS_ERR_* for bad frames, or the peer gone. */
function clientErrorCode(error: Error): string | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' && (code.startsWith('WS_ERR_') || PEER_GONE.has(code)) ? code : undefined;
}

/** The errorHandler of @fastify/websocket. */
export function onWebSocketError(error: Error, socket: WebSocket, request: FastifyRequest): void {
  const about = { reqId: request.id, url: redactSecretParams(request.url) };
  const code = clientErrorCode(error);
  if (code === undefined) request.log.error({ ...about, err: error }, 'WebSocket failed');
  else request.log.debug({ ...about, code }, `WebSocket closed: ${error.message}`);
  socket.terminate();
}
