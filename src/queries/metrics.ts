/** Picking metrics out of event data: dotted names are paths into nested objects (docs/api.md, "Data queries"). */
import { readPath } from '../expressions/index.ts';

const pathOf = (name: string) => name.split('.');

/** Only the named metrics, keeping the nesting; metrics an event lacks are left out. */
export function pickMetrics(data: Record<string, unknown>, metrics: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of metrics) {
    const path = pathOf(name);
    const value = readPath(data, path);
    if (value === undefined) continue;
    let target = picked;
    for (const segment of path.slice(0, -1)) {
      if (target[segment] === null || typeof target[segment] !== 'object') target[segment] = {};
      target = target[segment] as Record<string, unknown>;
    }
    target[path[path.length - 1] as string] = value;
  }
  return picked;
}

/** The value of a metric in an event, or null. */
export const metricValue = (data: Record<string, unknown>, name: string): unknown =>
  readPath(data, pathOf(name)) ?? null;
