/**
 * Every failure leaves as the contract's error body (CONTRACT 3). Unexpected errors are logged with
 * their detail and answered 500 without any: no stack, SQL or internal names reach the client.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

function fromFrameworkError(error: FastifyError): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, [
        { code: 'too_large', message: 'the request body is larger than this endpoint accepts' },
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

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = error instanceof ApiError ? error : fromFrameworkError(error);
    if (known) {
      return reply
        .status(known.status)
        .headers(known.headers)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify(known.toBody()));
    }
    request.log.error({ err: error, url: request.url, method: request.method }, 'request failed');
    const internal = new ApiError(500, [{ code: 'internal', message: 'an unexpected error occurred' }]);
    return reply.status(500).type('application/json; charset=utf-8').send(JSON.stringify(internal.toBody()));
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const notFound = new ApiError(404, [{ code: 'not_found', message: `no endpoint ${request.method} ${path}` }]);
    return reply.status(404).type('application/json; charset=utf-8').send(JSON.stringify(notFound.toBody()));
  });
}
