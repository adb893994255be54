/**
 * Every failure leaves as the error body of docs/api.md, "Errors", from every layer: routes, Fastify's
 * own checks before a route is found (frameworkErrors), and the node server's refusal of what is not
 * HTTP at all (clientErrorHandler). Unexpected errors are logged with their detail and answered 500
 * without any: no stack, SQL or internal names reach the client.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { redactSecretParams } from '../urls.ts';
import { describeBytes } from './body.ts';

/** The refusal of Fastify's own checks; a body too large is told the limit of its route. */
function fromFrameworkError(error: FastifyError, request: FastifyRequest): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return new ApiError(400, [{ code: 'invalid', message: 'the path is not validly percent-encoded' }]);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError(414, [{ code: 'too_large', message: 'a path segment is longer than any key' }]);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, [
        {
          code: 'too_large',
          param: 'body',
          message: `is larger than the ${describeBytes(request.routeOptions.bodyLimit)} (${request.routeOptions.bodyLimit} bytes) this endpoint accepts`,
        },
      ]);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, [{ code: 'unsupported_media_type', message: 'the Content-Type header is malformed' }]);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, [{ code: 'invalid', message: 'the Content-Length does not match the body' }]);
    default:
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return new ApiError(error.statusCode, [{ code: 'invalid', message: 'the request is malformed' }]);
      }
      return undefined;
  }
}

/**
 * `pretty=true` in the query string indents error answers too (docs/api.md, "Requests"); it is read
 * from the query as sent, since the request may have failed before its parameters were read.
 */
const wantsPretty = (request: FastifyRequest): boolean => {
  const pretty = (request.query as Record<string, unknown> | undefined)?.pretty;
  return pretty === 'true' || pretty === '1';
};

const sendError = (reply: FastifyReply, error: ApiError, pretty = false): FastifyReply =>
  reply
    .status(error.status)
    .headers(error.headers)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(error.toBody(), null, pretty ? 2 : undefined));

/**
 * Fastify's `frameworkErrors` option: what its router refuses before any route or hook runs (a bad
 * percent-encoding, a path parameter over the router's maxParamLength), which it would otherwise
 * answer in a body of its own.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const known = fromFrameworkError(error, request);
  if (known) {
    sendError(reply, known);
    return;
  }
  request.log.error(
    { err: error, reqId: request.id, url: redactSecretParams(request.url), method: request.method },
    'request failed',
  );
  sendError(reply, internalError());
}

const internalError = () => new ApiError(500, [{ code: 'internal', message: 'an unexpected error occurred' }]);

/** The node server's refusals of bytes that are no HTTP request it can read, by its error codes. */
function fromClientError(error: NodeJS.ErrnoException): ApiError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, [{ code: 'too_large', message: 'the request headers are larger than accepted' }]);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return requestTimedOut();
    default:
      return new ApiError(400, [{ code: 'invalid', message: 'the request is not valid HTTP' }]);
  }
}

/**
 * Fastify's `clientErrorHandler` (the node server's 'clientError' event): there is no request or
 * reply, so the answer is written on the socket as the node server itself would, only when nothing
 * of an answer has been written on it yet, and the connection is closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  closeWithAnswer(socket, socket.bytesWritten === 0 ? fromClientError(error) : undefined, error);
}

/** A request that did not arrive whole in its time: 408. */
export const requestTimedOut = () =>
  new ApiError(408, [{ code: 'timeout', message: 'the request did not arrive in time' }]);

/**
 * Writes `refusal` on the socket as a whole answer, when given and the socket still takes it, and
 * closes the connection: for requests that cannot be answered through a reply (or no longer may be).
 */
export function closeWithAnswer(socket: Socket, refusal: ApiError | undefined, cause?: Error): void {
  if (refusal && socket.writable) {
    const body = JSON.stringify(refusal.toBody());
    socket.write(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(cause);
}

/**
 * `refusalOf` names failures that are not the server's fault but a condition it is in (the store's disk
 * is full, its database does not answer): answered as it says, without an error logged for each.
 */
export function registerErrorHandling(
  app: FastifyInstance,
  refusalOf: (error: unknown) => ApiError | undefined = () => undefined,
): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = error instanceof ApiError ? error : (fromFrameworkError(error, request) ?? refusalOf(error));
    if (known) return sendError(reply, known, wantsPretty(request));
    request.log.error(
      { err: error, reqId: request.id, url: redactSecretParams(request.url), method: request.method },
      'request failed',
    );
    return sendError(reply, internalError());
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    return sendError(
      reply,
      new ApiError(404, [{ code: 'not_found', message: `no endpoint ${request.method} ${path}` }]),
      wantsPretty(request),
    );
  });
}
