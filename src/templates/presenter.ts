import type { TimeFormatter } from '../core/time.ts';
import type { ThingTemplateRow } from '../store/tables.ts';

export interface MetricDefinition {
  name: string;
  data_type: 'number' | 'string' | 'boolean';
  unit: string;
}

export const metricsOf = (row: Pick<ThingTemplateRow, 'metrics'>): MetricDefinition[] =>
  JSON.parse(row.metrics) as MetricDefinition[];

/**
 * The names that hold other metrics of `names` (`m` for `m.x`): a value is either a metric's or an
 * object of metrics, never both, so a template declares no metric inside another (docs/api.md,
 * "Thing templates").
 */
export function holdersOf(names: Iterable<string>): Set<string> {
  const holders = new Set<string>();
  for (const name of names) {
    for (let dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) holders.add(name.slice(0, dot));
  }
  return holders;
}

/** The metric of `known` that `name` lies inside (`m` for `m.x`), if any. */
export function holderIn(name: string, known: ReadonlySet<string>): string | undefined {
  for (let dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
    const holder = name.slice(0, dot);
    if (known.has(holder)) return holder;
  }
  return undefined;
}

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
