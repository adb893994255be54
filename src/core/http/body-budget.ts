/**
 * Bytes of request bodies under way at once (docs/api.md, "Requests"). Fastify reads a body whole before
 * a route runs, and routes check who is asking only then: without a bound, anyone could make the server
 * hold a body up to its route's limit (1 MiB, 10 MiB for imports) on every connection it may open.
 * Every request that declares a body counts its Content-Length (a chunked one, its route's body limit)
 * from when it arrives until it is answered or abandoned; one that would take the total past the budget,
 * while others are counted, is answered 503 with Retry-After at once, before its body is read. Routes
 * with an admission of their own (event ingestion, events/admission.ts) are counted there instead.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendAgainLater } from '../errors.ts';
import { DEFAULT_BODY_LIMIT } from './body.ts';

export const BODY_BUDGET = 64 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set when the route admits its bodies itself. */
    ownAdmission?: boolean;
  }
}

export function limitBodiesUnderWay(app: FastifyInstance, budget = BODY_BUDGET): void {
  let bytes = 0;
  const admitted = new WeakMap<FastifyRequest, number>();
  const leave = (request: FastifyRequest) => {
    const size = admitted.get(request);
    if (size === undefined) return;
    admitted.delete(request);
    bytes -= size;
  };
  app.addHook('onRequest', (request, _reply, done) => {
    const headers = request.raw.headers;
    const length = headers['content-length'];
    if (headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return done();
    if (request.routeOptions.config?.ownAdmission) return done();
    const declared = Number(length);
    const size =
      length !== undefined && Number.isFinite(declared) && declared >= 0
        ? declared
        : (request.routeOptions.bodyLimit ?? DEFAULT_BODY_LIMIT);
    if (bytes > 0 && bytes + size > budget) {
      return done(sendAgainLater('too many request bodies are being received; send again shortly'));
    }
    bytes += size;
    admitted.set(request, size);
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    leave(request);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    leave(request);
    done();
  });
}
