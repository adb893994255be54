import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { aggregatedData } from './aggregation.ts';
import { exportEvents } from './export.ts';
import { fleetAggregatedData } from './fleet.ts';
import { AggregatedDataParams, ExportEventsParams, FleetAggregatedDataParams, ThingDataParams } from './schemas.ts';
import { thingData } from './thing-data.ts';

const tags = ['Data queries'];

export function queryRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v3/query/thing_data',
      aliases: ['/api/v3/datonis_query/thing_data'],
      tags,
      summary: 'Events of a thing (or of every readable thing), a page at a time',
      description: 'Answer: {"<thing_key>": {"total_event_count", "page_number", "event_data": [...]}}',
      access: permission('data', 'read'),
      params: ThingDataParams,
      handler: async ({ params, time, visibleOrganisations }) =>
        thingData(
          store.db,
          {
            organisationKeys: await visibleOrganisations(),
            thingKey: params.thing_key,
            from: params.from,
            to: params.to,
            page: params.page ?? 1,
            per: params.per ?? 100,
            order: params.order ?? 'desc',
            metrics: params.metrics,
            dataFormat: params.data_format ?? 'map',
            byCreatedAt: params.query_by_created_at ?? false,
          },
          time,
        ),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/query/thing_aggregated_data',
      aliases: ['/api/v3/datonis_query/thing_aggregated_data'],
      tags,
      summary: 'Count, sum, min, max and avg of numeric metrics, overall, per thing and per time bucket',
      description:
        'Answer: {"summary_result", "thing_wise_result", "time_grouped_result" (with time_grouping)}. Buckets are aligned to the calendar in time_zone; with time_grouping or idle_time_required, a period not given ends now and spans the last hour (minute), day (hour, or idle time alone), 30 days (day) or 365 days (month).',
      access: permission('data', 'read'),
      params: AggregatedDataParams,
      handler: async ({ params, time, visibleOrganisations }) =>
        aggregatedData(
          store.db,
          {
            organisationKeys: await visibleOrganisations(),
            thingKeys: params.thing_keys,
            thingKey: params.thing_key,
            grouping: params.time_grouping,
            groupingValue: params.time_grouping_value ?? 1,
            idle: params.idle_time_required === true || params.idle_time_required === 1,
            from: params.from,
            to: params.to,
            metrics: params.metrics,
            functions: params.functions,
          },
          time,
        ),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/query/fleet_aggregated_data',
      aliases: ['/api/v3/datonis_query/fleet_aggregated_data'],
      tags,
      summary: 'Count, sum, min, max and avg of numeric metrics across many things, overall and per time bucket',
      description:
        'The things of thing_keys (or thing_key, one thing), group_key or thing_template_key (one of them; none: every thing the caller can read). Answer: {"thing_count", "summary_result", "time_grouped_result" (with time_grouping)}, each bucket present, an empty one with count 0, sum 0 and null min, max and avg.',
      access: permission('data', 'read'),
      params: FleetAggregatedDataParams,
      handler: async ({ params, time, visibleOrganisations }) =>
        fleetAggregatedData(
          store.db,
          {
            organisationKeys: await visibleOrganisations(),
            thingKeys: params.thing_keys,
            thingKey: params.thing_key,
            groupKey: params.group_key,
            thingTemplateKey: params.thing_template_key,
            grouping: params.time_grouping,
            groupingValue: params.time_grouping_value ?? 1,
            from: params.from,
            to: params.to,
            metrics: params.metrics,
            functions: params.functions,
          },
          time,
        ),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/things/:thing_key/events/export',
      tags,
      summary: 'Every event of a thing in a range, streamed as NDJSON or CSV, oldest first',
      description:
        'ndjson: one {"timestamp","data"} per line (application/x-ndjson); csv: a header timestamp,<metric>,... then a row per event (text/csv). from and to are optional (default: every event).',
      access: permission('data', 'read'),
      params: ExportEventsParams,
      handler: async ({ params, time, visibleOrganisations, reply }) => {
        const answer = await exportEvents(
          store.db,
          {
            organisationKeys: await visibleOrganisations(),
            thingKey: params.thing_key,
            from: params.from,
            to: params.to,
            format: params.format ?? 'ndjson',
            metrics: params.metrics,
          },
          time,
        );
        reply.header('content-type', answer.contentType);
        reply.header('content-disposition', `attachment; filename="${answer.fileName}"`);
        return answer.body;
      },
    }),
  ];
}
