import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { EventLimitSettings } from '../events/event-limits.ts';
import type { Store } from '../store/store.ts';
import { FleetSummaryAnswer, FleetSummaryParams, UsageAnswer, UsageParams } from './schemas.ts';
import { type ApiRateLimiter, fleetSummaryOf, type LimitedEventCounter, usageOf } from './service.ts';

/**
 * `eventLimits`: the server's EVENTS_PER_SECOND_PER_ORGANISATION and EVENTS_PER_SECOND_PER_KEY_PAIR
 * (0: none), which usage reports.
 */
export function usageRoutes(
  store: Store,
  limiter: ApiRateLimiter,
  limited?: LimitedEventCounter,
  eventLimits: EventLimitSettings = { perOrganisation: 0, perKeyPair: 0 },
): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/usage',
      tags: ['Usage'],
      summary: "What the caller's organisation uses",
      description:
        'Things, events stored today and this month (by receipt, UTC), user API requests today (as the rate ' +
        'limit counts them), events refused today past its events-a-second limits, an estimate of the storage its things and events take, ' +
        'and the events-a-second limits it is under (its own, or the server default, and each key pair’s).',
      access: permission('thing', 'read'),
      params: UsageParams,
      response: UsageAnswer,
      handler: async ({ principal }) => ({
        usage: await usageOf(store, limiter, principal.organisationKey, Date.now(), limited, eventLimits),
      }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/fleet_summary',
      tags: ['Usage'],
      summary: "How the caller's organisation's fleet is doing",
      description:
        'Its things, how many are online and offline now, and the events received (stored) in each of the ' +
        'last 60 minutes: what the console’s overview shows, read in two small queries however large the fleet.',
      access: permission('thing', 'read'),
      params: FleetSummaryParams,
      response: FleetSummaryAnswer,
      handler: async ({ principal, time }) => {
        const summary = await fleetSummaryOf(store, principal.organisationKey);
        return {
          fleet_summary: {
            ...summary,
            events_per_minute: summary.events_per_minute.map((m) => ({ minute: time(m.minute), events: m.events })),
          },
        };
      },
    }),
  ];
}
