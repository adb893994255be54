/** Picking metrics out of event data: dotted names are paths into nested objects (docs/api.md, "Data queries"). */
import { readPath } from '../expressions/index.ts';

const pathOf = (name: string) => name.split('.');

/** Where a metric is in event data: the path of its dotted name, or undefined when the event lacks it. */
export type MetricLocator = (data: Record<string, unknown>, name: string) => readonly string[] | undefined;

/**
 * Only the named metrics, keeping the nesting; metrics an event lacks are left out. `locate` says
 * where a name is found; by default its dotted name is the path into nested objects.
 */
export function pickMetrics(
  data: Record<string, unknown>,
  metrics: readonly string[],
  locate?: MetricLocator,
): Record<string, unknown> {
  // Objects without a prototype: a name is the user's (an event's own `__proto__` member is a member,
  // kept as one), and a path through `__proto__` never reaches Object.prototype.
  const picked: Record<string, unknown> = Object.create(null);
  // The objects made here; one of the event's, picked whole by an earlier name, is copied before a
  // later name adds to it, so the event's data is never changed.
  const made = new Set<object>([picked]);
  for (const name of metrics) {
    const path = locate ? locate(data, name) : pathOf(name);
    if (path === undefined) continue;
    const value = readPath(data, path);
    if (value === undefined) continue;
    let target = picked;
    for (const segment of path.slice(0, -1)) {
      const next = Object.hasOwn(target, segment) ? target[segment] : undefined;
      if (next === null || typeof next !== 'object' || !made.has(next)) {
        const own: Record<string, unknown> = Array.isArray(next) ? (next.slice() as never) : Object.create(null);
        if (next !== null && typeof next === 'object' && !Array.isArray(next)) Object.assign(own, next);
        made.add(own);
        target[segment] = own;
      }
      target = target[segment] as Record<string, unknown>;
    }
    target[path[path.length - 1] as string] = value;
  }
  return picked;
}

/** The value of a metric in an event, or null. */
export const metricValue = (data: Record<string, unknown>, name: string): unknown =>
  readPath(data, pathOf(name)) ?? null;

/** The value at a path found by a MetricLocator. */
export const valueAtPath = (data: Record<string, unknown>, path: readonly string[]): unknown => readPath(data, path);
