/**
 * A WebSocket upgrade whose handshake headers are wrong is refused in the API's error shape (docs/api.md,
 * "Errors"), naming the header, before the WebSocket server sees it: it would otherwise answer a bare
 * `400 Bad Request` of its own. The checks are those of RFC 6455 §4.2.1 that the server makes.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

/** A Sec-WebSocket-Key: 16 bytes in base64. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** An HTTP token (RFC 9110 §5.6.2), as each subprotocol name must be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The protocol versions the WebSocket server speaks. */
const VERSIONS = ['13', '8'];

/** The header an upgrade's handshake has wrong, and how; undefined when it has none wrong. */
export function handshakeProblem(
  headers: Record<string, string | string[] | undefined>,
): { param: string; message: string } | undefined {
  const key = headers['sec-websocket-key'];
  if (typeof key !== 'string' || !KEY.test(key)) {
    return { param: 'Sec-WebSocket-Key', message: 'must be 16 bytes in base64 (RFC 6455)' };
  }
  const version = headers['sec-websocket-version'];
  if (typeof version !== 'string' || !VERSIONS.includes(version.trim())) {
    return { param: 'Sec-WebSocket-Version', message: 'must be 13' };
  }
  const protocols = headers['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const names = String(protocols)
      .split(',')
      .map((name) => name.trim());
    if (names.some((name) => !TOKEN.test(name)) || new Set(names).size !== names.length) {
      return { param: 'Sec-WebSocket-Protocol', message: 'must be a list of distinct protocol names' };
    }
  }
  return undefined;
}

/** Refuses WebSocket upgrades with bad handshake headers, as a 400 in the error shape. */
export function checkWebSocketHandshakes(app: FastifyInstance): void {
  // A callback, not an async function: it runs for every request, and a promise each costs.
  app.addHook('onRequest', (request, _reply, done) => {
    const problem = request.ws && request.method === 'GET' ? handshakeProblem(request.headers) : undefined;
    if (problem === undefined) return done();
    // RFC 6455 §4.4: a version refused is answered with the versions the server speaks.
    const headers: Record<string, string> =
      problem.param === 'Sec-WebSocket-Version' ? { 'sec-websocket-version': VERSIONS.join(', ') } : {};
    done(new ApiError(400, [{ code: 'invalid', ...problem }], undefined, headers));
  });
}
