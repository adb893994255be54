/**
 * Bytes of request bodies under way at once (docs/api.md, "Requests"). Fastify reads a body whole before
 * a route runs: without a bound, signed-in clients, sign-ins and devices could make the server hold a
 * body up to its route's limit (1 MiB, 10 MiB for imports) on every connection they may open (a request
 * without a valid token or key is refused before its body, route.ts).
 * Every request that declares a body counts its Content-Length (a chunked one, its route's body limit)
 * from when it arrives until it is answered or abandoned; one that would take the total past the budget,
 * while others are counted, is answered 503 with Retry-After at once, before its body is read. Routes
 * with an admission of their own (event ingestion, events/admission.ts) are counted there instead.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sendAgainLater } from '../errors.ts';
import { DEFAULT_BODY_LIMIT, declaresBody } from './body.ts';

export const BODY_BUDGET = 64 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set when the route admits its bodies itself. */
    ownAdmission?: boolean;
  }
}

/**
 * Bodies counted against a budget by their declared length (a chunked one by `unknownLength`): the
 * count both the bodies of all routes (below) and event ingestion (events/admission.ts) keep.
 */
export class BodyBytes {
  private bytes = 0;

  constructor(private readonly budget: number) {}

  /**
   * Counts the request's body; answers its size, or undefined when it would take the total past the
   * budget while others are counted.
   */
  take(request: FastifyRequest, unknownLength: number): number | undefined {
    const declared = Number(request.headers['content-length']);
    const size = Number.isFinite(declared) && declared >= 0 ? declared : unknownLength;
    if (this.bytes > 0 && this.bytes + size > this.budget) return undefined;
    this.bytes += size;
    return size;
  }

  give(size: number): void {
    this.bytes -= size;
  }
}

export function limitBodiesUnderWay(app: FastifyInstance, budget = BODY_BUDGET): void {
  const bodies = new BodyBytes(budget);
  app.addHook('onRequest', (request, reply, done) => {
    if (!declaresBody(request) || request.routeOptions.config?.ownAdmission) return done();
    const size = bodies.take(request, request.routeOptions.bodyLimit ?? DEFAULT_BODY_LIMIT);
    if (size === undefined) {
      return done(sendAgainLater('too many request bodies are being received; send again shortly'));
    }
    // Counted until the answer is sent or the connection is gone; requests without a body cost no
    // listener (hooks on every request's end cost a tenth of a small answer's time).
    reply.raw.once('close', () => bodies.give(size));
    done();
  });
}
