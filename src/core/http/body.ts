/**
 * Request bodies. Every body is read as raw bytes whatever its Content-Type (device SDKs send none or a
 * wrong one, and their signatures cover the raw bytes); JSON is parsed afterwards, and an empty body is
 * no body (docs/api.md, "Requests").
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
export const BULK_BODY_LIMIT = 10 * 1024 * 1024;
/** Bodies of requests anyone may send, before any sign-in (the sign-ins): a form's worth. */
export const PUBLIC_BODY_LIMIT = 16 * 1024;

/**
 * The largest WebSocket message the server takes, on every WebSocket route (`ws` closes the socket with
 * 1009 beyond it, before holding more): a realtime subscribe naming 1,000 things fits, and MQTT over
 * WebSocket announces it to MQTT 5 devices as their Maximum Packet Size (docs/devices.md).
 */
export const MAX_WEBSOCKET_MESSAGE_BYTES = 128 * 1024;

/** A limit in bytes as people read it: `1 MiB`, `0.02 MiB`. */
export const describeBytes = (bytes: number): string => `${Number((bytes / (1024 * 1024)).toFixed(2))} MiB`;

export function registerRawBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
}

/**
 * An onRequest hook: a request that declares no body (no Transfer-Encoding, no or zero
 * Content-Length) loses its Content-Type, which many clients name on every request, so the body
 * parser is skipped instead of reading an empty stream: about a sixth of what a cached list answer
 * costs (docs/benchmarks-history.md, "midday session").
 */
export function ignoreContentTypeWithoutBody(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const headers = request.raw.headers;
  if (headers['content-type'] !== undefined && !declaresBody(request)) delete headers['content-type'];
  done();
}

/** Whether a request comes with a body: a Transfer-Encoding, or a Content-Length other than 0. */
export function declaresBody(request: FastifyRequest): boolean {
  const headers = request.raw.headers;
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function rawBody(request: FastifyRequest): Buffer | undefined {
  const body = request.body;
  return Buffer.isBuffer(body) && body.length > 0 ? body : undefined;
}

/** Whether the request's body is declared CSV (`text/csv`, with or without parameters). */
export function isCsv(request: FastifyRequest): boolean {
  return /^text\/csv\s*(;|$)/i.test(String(request.headers['content-type']));
}

/** Parses a JSON body text; undefined when there is none. Malformed JSON is a 400. */
export function parseJsonBody(raw: Buffer | string | undefined): unknown {
  if (raw === undefined) return undefined;
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError(400, [
      { code: 'invalid', param: 'body', message: `is not valid JSON (${(error as Error).message})` },
    ]);
  }
}

/** A JSON body as an object of parameters; anything but an object (or nothing) is a 400. */
export function jsonBodyParams(raw: Buffer | undefined): Record<string, unknown> | undefined {
  const body = parseJsonBody(raw);
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError(400, [{ code: 'invalid', param: 'body', message: 'must be a JSON object' }]);
  }
  return body as Record<string, unknown>;
}
