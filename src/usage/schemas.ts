import { Type } from '@sinclair/typebox';
import { CommonParams, StringEnum } from '../core/http/schema.ts';

export const UsageParams = Type.Object({ ...CommonParams });

export const UsageAnswer = Type.Object({
  usage: Type.Object({
    things: Type.Integer(),
    events_stored_today: Type.Integer({ description: 'events received since midnight UTC' }),
    events_stored_this_month: Type.Integer({ description: 'events received since the first of the month, UTC' }),
    api_requests_today: Type.Integer({ description: 'user API requests counted by the rate limit since midnight UTC' }),
    events_limited_today: Type.Integer({
      description:
        'events refused since midnight UTC (429) past the organisation’s or a key pair’s events-a-second limit (docs/operations.md)',
    }),
    storage_bytes: Type.Integer({ description: 'an estimate of the bytes the things and their events take' }),
    events_per_second_limit: Type.Integer({
      description:
        'the events a second the organisation’s devices and users may send together (each instance counts its own), beyond which 429; 0: no limit',
    }),
    events_per_second_limit_source: StringEnum(['organisation', 'server_default'], {
      description:
        'organisation: its own events_per_second, set by its parent; server_default: it has none, and the server’s EVENTS_PER_SECOND_PER_ORGANISATION applies',
    }),
    events_per_second_per_key_pair_limit: Type.Integer({
      description:
        'the events a second each of its key pairs may send (each instance counts its own), beyond which 429, the server’s EVENTS_PER_SECOND_PER_KEY_PAIR; 0: no limit',
    }),
  }),
});

export const FleetSummaryParams = Type.Object({ ...CommonParams });

export const FleetSummaryAnswer = Type.Object({
  fleet_summary: Type.Object({
    things: Type.Integer({ description: 'the organisation’s things now' }),
    online: Type.Integer({ description: 'things alive now (heard from within twice their heartbeat interval)' }),
    offline: Type.Integer({ description: 'things not alive now' }),
    events_last_hour: Type.Integer({
      description: 'events received (stored) in the current minute and the 59 before it',
    }),
    events_per_minute: Type.Array(
      Type.Object({
        minute: Type.Union([Type.Integer(), Type.String()], { description: 'the minute’s start' }),
        events: Type.Integer({ description: 'events received (stored) in that minute' }),
      }),
      { description: 'the 60 minutes of events_last_hour, oldest first, each present (0 when none)' },
    ),
  }),
});
