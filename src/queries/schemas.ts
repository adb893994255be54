import { Type } from '@sinclair/typebox';
import { CommonParams, Key, OemParams, StringEnum } from '../core/http/schema.ts';

const PointInTime = Type.Optional(
  Type.Unsafe<string | number>({
    type: ['string', 'number'],
    description: 'yyyy/mm/dd hh:mm:ss or yyyy-mm-dd hh:mm:ss in time_zone, or epoch seconds; inclusive',
  }),
);
const Metrics = Type.Optional(
  Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    maxItems: 500,
    description: 'metric names; dots address nested values',
  }),
);

export const MAX_THING_DATA_PER = 10_000;

export const ThingDataParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_key: Type.Optional(Key('the thing; without it, every thing the caller can read')),
  from: PointInTime,
  to: PointInTime,
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
  per: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_THING_DATA_PER, default: 100 })),
  order: Type.Optional(StringEnum(['asc', 'desc'], { description: 'on timestamp; default desc' })),
  metrics: Metrics,
  data_format: Type.Optional(
    StringEnum(['map', 'array'], { description: 'array: rows [timestamp, v1, v2, ...] in the order of metrics' }),
  ),
  query_by_created_at: Type.Optional(
    Type.Boolean({ description: 'from/to apply to the receipt time instead of the event time' }),
  ),
});

const ThingKeys = Type.Optional(
  Type.Array(Key(), { maxItems: 1000, description: 'default: every thing the caller can read' }),
);
/** One thing, as thing_data names it: a shorthand for thing_keys: [thing_key]. */
const OneThingKey = Type.Optional(Key('one thing: the same as thing_keys [thing_key]; not with thing_keys'));

/** What thing_aggregated_data and fleet_aggregated_data both take: the range, buckets and functions. */
const aggregationParams = {
  time_grouping: Type.Optional(StringEnum(['month', 'day', 'hour', 'minute'])),
  time_grouping_value: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: 1 })),
  from: PointInTime,
  to: PointInTime,
  metrics: Metrics,
  functions: Type.Optional(
    Type.Array(StringEnum(['avg', 'min', 'max', 'sum', 'count']), {
      description: 'default all; avg brings sum and count',
    }),
  ),
};

export const AggregatedDataParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_keys: ThingKeys,
  thing_key: OneThingKey,
  idle_time_required: Type.Optional(
    Type.Unsafe<boolean | number>({
      type: ['boolean', 'integer'],
      enum: [true, false, 1, 0],
      description: 'add idle_time_mins and total_time_mins',
    }),
  ),
  ...aggregationParams,
});

export const FleetAggregatedDataParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_keys: Type.Optional(
    Type.Array(Key(), {
      maxItems: 1000,
      description: 'these things (one of thing_keys, thing_key, group_key, thing_template_key)',
    }),
  ),
  thing_key: OneThingKey,
  group_key: Type.Optional(Key("the group's things, a dynamic group's as its expression chooses now")),
  thing_template_key: Type.Optional(Key("the template's things")),
  ...aggregationParams,
});

export const ExportEventsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_key: Key('the thing'),
  from: PointInTime,
  to: PointInTime,
  format: Type.Optional(StringEnum(['ndjson', 'csv'], { description: 'default ndjson' })),
  metrics: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      maxItems: 500,
      description:
        'only these metrics of each event, and only events with any of them (dots address nested values); csv columns in this order, by default every metric of the events, by name',
    }),
  ),
});
