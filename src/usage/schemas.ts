import { Type } from '@sinclair/typebox';
import { CommonParams } from '../core/http/schema.ts';

export const UsageParams = Type.Object({ ...CommonParams });

export const UsageAnswer = Type.Object({
  usage: Type.Object({
    things: Type.Integer(),
    events_stored_today: Type.Integer({ description: 'events received since midnight UTC' }),
    events_stored_this_month: Type.Integer({ description: 'events received since the first of the month, UTC' }),
    api_requests_today: Type.Integer({ description: 'user API requests counted by the rate limit since midnight UTC' }),
    storage_bytes: Type.Integer({ description: 'an estimate of the bytes the things and their events take' }),
  }),
});
