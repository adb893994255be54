import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { UsageAnswer, UsageParams } from './schemas.ts';
import { type ApiRateLimiter, usageOf } from './service.ts';

export function usageRoutes(store: Store, limiter: ApiRateLimiter): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/usage',
      tags: ['Usage'],
      summary: "What the caller's organisation uses",
      description:
        'Things, events stored today and this month (by receipt, UTC), user API requests today (as the rate ' +
        'limit counts them) and an estimate of the storage its things and events take.',
      access: permission('thing', 'read'),
      params: UsageParams,
      response: UsageAnswer,
      handler: async ({ principal }) => ({ usage: await usageOf(store, limiter, principal.organisationKey) }),
    }),
  ];
}
