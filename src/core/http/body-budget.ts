/**
 * Bytes of request bodies under way at once (docs/api.md, "Requests"). Fastify reads a body whole before
 * a route runs, and routes check who is asking only then: without a bound, anyone could make the server
 * hold a body up to its route's limit (1 MiB, 10 MiB for imports) on every connection it may open.
 * Every request that declares a body counts its Content-Length (a chunked one, its route's body limit)
 * from when it arrives until it is answered or abandoned; one that would take the total past the budget,
 * while others are counted, is answered 503 with Retry-After at once, before its body is read. Routes
 * with an admission of their own (event ingestion, events/admission.ts) are counted there instead.
 */
import type { FastifyInstance } from 'fastify';
import { sendAgainLater } from '../errors.ts';
import { DEFAULT_BODY_LIMIT, declaresBody } from './body.ts';

export const BODY_BUDGET = 64 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set when the route admits its bodies itself. */
    ownAdmission?: boolean;
  }
}

export function limitBodiesUnderWay(app: FastifyInstance, budget = BODY_BUDGET): void {
  let bytes = 0;
  app.addHook('onRequest', (request, reply, done) => {
    if (!declaresBody(request) || request.routeOptions.config?.ownAdmission) return done();
    const length = request.raw.headers['content-length'];
    const declared = Number(length);
    const size =
      length !== undefined && Number.isFinite(declared) && declared >= 0
        ? declared
        : (request.routeOptions.bodyLimit ?? DEFAULT_BODY_LIMIT);
    if (bytes > 0 && bytes + size > budget) {
      return done(sendAgainLater('too many request bodies are being received; send again shortly'));
    }
    bytes += size;
    // Counted until the answer is sent or the connection is gone; requests without a body cost no
    // listener (hooks on every request's end cost a tenth of a small answer's time).
    reply.raw.once('close', () => {
      bytes -= size;
    });
    done();
  });
}
