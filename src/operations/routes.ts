/**
 * `GET /metrics` (Prometheus) and `GET /readyz` (docs/operations.md): for monitoring and load
 * balancers, outside the REST API's conventions and its OpenAPI document.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { unauthorized } from '../core/errors.ts';
import type { Metrics } from './metrics.ts';

export interface Readiness {
  /** Why the server should not be sent traffic now; none when it is ready. */
  reasons(): Promise<string[]>;
}

export function registerOperationsRoutes(
  app: FastifyInstance,
  metrics: Metrics,
  readiness: Readiness,
  metricsToken: string | undefined,
): void {
  const expected = metricsToken === undefined ? undefined : Buffer.from(`Bearer ${metricsToken}`);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (expected) {
      const given = Buffer.from(request.headers.authorization ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
      }
    }
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const reasons = await readiness.reasons();
    if (reasons.length === 0) return reply.type('application/json').send('{"status":"ready"}');
    return reply
      .status(503)
      .type('application/json')
      .send(JSON.stringify({ status: 'not_ready', reasons }));
  });
}
