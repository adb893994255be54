/**
 * Dashboards as the API keeps them (docs/api.md, "Dashboards"), and what the console works out of
 * them: the things a widget's source names, the time range its widgets share.
 */
import { answer, api, isRefusal } from '../api/client.ts';
import type { components, paths } from '../api/schema';

export type Dashboard = components['schemas']['Dashboard'];
export type Widget = Dashboard['widgets'][number];
export type WidgetType = Widget['type'];
export type Source = NonNullable<Widget['source']>;
type ListedThing = paths['/api/v3/things']['get']['responses'][200]['content']['application/json']['things'][number];
/** What widgets show of a thing, as a list or a single thing's answer gives it. */
export type Thing = Pick<ListedThing, 'thing_key' | 'name' | 'alive' | 'last_event' | 'coordinates'>;

/** The API's widget types, in the order the editor offers them. */
export const WIDGET_TYPES: WidgetType[] = ['timeseries', 'value', 'gauge', 'things', 'alerts', 'map', 'text'];

/** Each type's name in the console: the API's ids (`timeseries`) mean little to a person. */
export const WIDGET_TYPE_NAMES: Record<WidgetType, string> = {
  timeseries: 'Time series',
  value: 'Value',
  gauge: 'Gauge',
  things: 'Things table',
  alerts: 'Alerts',
  map: 'Map',
  text: 'Text',
};

/** The choices of the shared `Time range` control: the API's `{"last"}` forms. */
export const TIME_RANGES = [
  { last: '15m', label: 'Last 15 minutes' },
  { last: '1h', label: 'Last hour' },
  { last: '6h', label: 'Last 6 hours' },
  { last: '24h', label: 'Last 24 hours' },
  { last: '7d', label: 'Last 7 days' },
  { last: '30d', label: 'Last 30 days' },
] as const;

const UNIT_SECONDS: Record<string, number> = { m: 60, h: 3600, d: 86400 };

/** A time range as epoch seconds `[from, to]`, `to` being now for a `{"last"}` one. */
export function rangeSeconds(range: Dashboard['time_range'], now = Math.floor(Date.now() / 1000)): [number, number] {
  if ('last' in range) {
    const match = /^(\d+)([mhd])$/.exec(range.last);
    const seconds = match ? Number(match[1]) * (UNIT_SECONDS[match[2] as string] ?? 3600) : 3600;
    return [now - seconds, now];
  }
  return [range.from, range.to];
}

/** A thing key as a widget writes it, with `$<variable>` replaced by the thing chosen for it. */
export const resolveKey = (key: string, chosen: Record<string, string>): string =>
  key.startsWith('$') ? (chosen[key.slice(1)] ?? '') : key;

/** What a source chooses: the things found, and the keys the viewer cannot read (drawn as missing). */
export interface Resolved {
  things: Thing[];
  missing: string[];
}

/** At most this many things of a group or template are drawn by one widget. */
export const SOURCE_LIMIT = 100;

/**
 * The things of a source, read with the viewer's own permissions: a key the viewer cannot read (or
 * that no longer exists) is listed as missing, never an error for the whole widget.
 */
export async function resolveSource(source: Source, chosen: Record<string, string>): Promise<Resolved> {
  if ('thing_keys' in source && source.thing_keys) {
    const keys = source.thing_keys.map((k) => resolveKey(k, chosen)).filter((k) => k !== '');
    const found = await Promise.all(
      keys.map((thing_key) =>
        answer(api.GET('/api/v3/things/{thing_key}', { params: { path: { thing_key } } })).then(
          (a) => a.thing,
          (failure) => refusedOrThrow(failure),
        ),
      ),
    );
    return {
      things: found.filter((t) => t !== undefined) as Thing[],
      missing: keys.filter((_, i) => found[i] === undefined),
    };
  }
  const filter =
    'group_key' in source && source.group_key
      ? { group_key: source.group_key }
      : { thing_template_key: (source as { thing_template_key: string }).thing_template_key };
  try {
    const list = await answer(
      api.GET('/api/v3/things', {
        params: { query: { per: SOURCE_LIMIT, order_by: 'name', order: 'asc', ...filter } },
      }),
    );
    return { things: list.things, missing: [] };
  } catch (failure) {
    refusedOrThrow(failure);
    return { things: [], missing: [Object.values(filter)[0] as string] };
  }
}

/**
 * A refusal (not found, not the viewer's to read, a bad key: 4xx but 429) makes a source's part
 * missing; any other failure is the source's, so that it is tried again (useLoad) rather than shown
 * as missing with nothing left to follow.
 */
function refusedOrThrow(failure: unknown): undefined {
  if (isRefusal(failure)) return undefined;
  throw failure;
}

/** The dashboard's fields an update or a create sends: everything but its keys and times. */
export function writable(dashboard: Dashboard, withKeys: boolean) {
  return {
    name: dashboard.name,
    description: dashboard.description,
    time_range: dashboard.time_range,
    variables: dashboard.variables,
    widgets: dashboard.widgets.map((w) => {
      if (withKeys) return w;
      const { widget_key: _, ...rest } = w as Widget & { widget_key?: string };
      return rest as Widget;
    }),
  };
}
