import type { TimeFormatter } from '../core/time.ts';
import type { ThingTemplateRow } from '../store/tables.ts';

export interface MetricDefinition {
  name: string;
  data_type: 'number' | 'string' | 'boolean';
  unit: string;
}

export const metricsOf = (row: Pick<ThingTemplateRow, 'metrics'>): MetricDefinition[] =>
  JSON.parse(row.metrics) as MetricDefinition[];

export function presentTemplate(row: ThingTemplateRow, time: TimeFormatter) {
  return {
    thing_template_key: row.thing_template_key,
    name: row.name,
    description: row.description,
    metrics: metricsOf(row),
    heartbeat_interval: row.heartbeat_interval,
    idle_timeout: row.idle_timeout,
    retention_days: row.retention_days ?? null,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
