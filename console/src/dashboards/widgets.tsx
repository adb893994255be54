/**
 * What each widget type draws (docs/console.md, "Dashboards"), read with the viewer's own permissions
 * and kept live through realtime push; live changes are drawn at most once per animation frame.
 */
import type { ComponentType } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiFailure, answer, api, isRefusal, messageOf } from '../api/client.ts';
import { useMayRead } from '../caller.ts';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { Chart, type ChartHandle, type Columns } from '../components/chart.tsx';
import { unitsOfMetrics } from '../components/chart-scales.ts';
import { Failure } from '../components/failure.tsx';
import { BreakableName } from '../components/name-breaks.tsx';
import { unreachable, useLoad } from '../components/use-load.ts';
import { countOf, groupingSeconds, showDuration, showShortTime, showTime, showValue } from '../format.ts';
import { type Message, realtime } from '../realtime.ts';
import { Link, segment } from '../router.tsx';
import { onSessionChange } from '../session.ts';
import { Markdown } from './markdown.tsx';
import { type Resolved, resolveKey, resolveSource, type Thing, type Widget } from './model.ts';
import { addToLines, asNumber, joinArrived, type Lines, pick, type ReadEvent, rawColumns } from './raw-lines.ts';
import { useChartFit } from './use-chart-fit.ts';
import { useFrameState } from './use-frame-state.ts';

export interface WidgetProps {
  widget: Widget;
  /** The shared time range, epoch seconds. */
  range: [number, number];
  /** Whether that range is rolling (the last so long, read again every minute) rather than fixed. */
  rolling: boolean;
  /** The thing chosen for each variable. */
  chosen: Record<string, string>;
}

/** The colour of the highest threshold at or below `value`. */
export function thresholdColour(thresholds: Widget['thresholds'], value: unknown): string | undefined {
  if (typeof value !== 'number') return undefined;
  let colour: string | undefined;
  for (const t of thresholds ?? []) if (value >= t.from) colour = t.color;
  return colour;
}

/** Things a widget's source chose, and those shown as missing; read again as things change. */
function useSource(widget: Widget, chosen: Record<string, string>) {
  const source = widget.source;
  const loaded = useLoad<Resolved>(
    () => (source ? resolveSource(source, chosen) : Promise.resolve({ things: [], missing: [] })),
    [JSON.stringify(source), JSON.stringify(chosen)],
  );
  // reloadSoon: a things widget's `things` subscription reads its source again when it is accepted after
  // the same lost connection; both come to one read.
  useEffect(() => realtime.onResume(loaded.reloadSoon), []);
  return loaded;
}

function Missing({ keys }: { keys: string[] }) {
  if (keys.length === 0) return null;
  return <p class="notice">Missing (not found, or not yours to read): {keys.join(', ')}</p>;
}

/** The seconds one bucket of `buckets` covers. */
const bucketSeconds = (range: [number, number]): number => {
  const { time_grouping, time_grouping_value } = buckets(range);
  return groupingSeconds(time_grouping, time_grouping_value);
};

/** Seconds between buckets for a range: a few hundred points at most. */
function buckets(range: [number, number]): { time_grouping: 'minute' | 'hour'; time_grouping_value: number } {
  const span = range[1] - range[0];
  if (span <= 3600) return { time_grouping: 'minute', time_grouping_value: 1 };
  if (span <= 6 * 3600) return { time_grouping: 'minute', time_grouping_value: 5 };
  if (span <= 86400) return { time_grouping: 'minute', time_grouping_value: 15 };
  if (span <= 7 * 86400) return { time_grouping: 'hour', time_grouping_value: 1 };
  return { time_grouping: 'hour', time_grouping_value: 6 };
}

type Bucket = Record<string, Record<string, number | null>>;

/** Columns from rows keyed by time: one series per label, null where a row lacks it. */
function toColumns(labels: string[], rows: Map<number, (number | null)[]>): Columns {
  const x = [...rows.keys()].sort((a, b) => a - b);
  return {
    metrics: labels,
    x,
    ys: labels.map((_, i) => x.map((t) => rows.get(t)?.[i] ?? null)),
  };
}

/** The template a thing of a source is of: the API answers it with the thing, beyond what widgets show. */
const templateOf = (thing: Thing): string | undefined => (thing as { thing_template_key?: string }).thing_template_key;

/**
 * Templates' units by key, as read: kept for the session (at most this many templates), as a rolling
 * range draws each time series anew every minute.
 */
const UNITS_KEPT = 100;
const unitsByTemplate = new Map<string, Promise<Record<string, string>>>();
onSessionChange(() => unitsByTemplate.clear());

/**
 * A template's metrics' units, read once: a template the role may not read (or one gone) gives none; a
 * read that failed otherwise is tried again next time.
 */
function templateUnits(thing_template_key: string): Promise<Record<string, string>> {
  const kept = unitsByTemplate.get(thing_template_key);
  if (kept) return kept;
  const read = answer(
    api.GET('/api/v3/thing_templates/{thing_template_key}', { params: { path: { thing_template_key } } }),
  ).then(
    ({ thing_template }) => unitsOfMetrics(thing_template.metrics),
    (failure) => {
      if (!(failure instanceof ApiFailure && (failure.status === 403 || failure.status === 404)))
        unitsByTemplate.delete(thing_template_key);
      return {} as Record<string, string>;
    },
  );
  if (unitsByTemplate.size >= UNITS_KEPT) unitsByTemplate.delete(unitsByTemplate.keys().next().value as string);
  unitsByTemplate.set(thing_template_key, read);
  return read;
}

/**
 * Each metric's unit as the templates give it (the first that does), read as the thing page reads its
 * template's (docs/console.md, "Pages"); a template the role may not read gives none.
 */
/** A template's metrics' units by name. */
type Units = Record<string, string>;

async function unitsOfTemplates(templateKeys: (string | undefined)[]): Promise<Map<string, Units>> {
  const keys = [...new Set(templateKeys.filter((key): key is string => !!key))];
  const read = await Promise.all(keys.map(templateUnits));
  return new Map(keys.map((key, i) => [key, read[i] ?? {}]));
}

/** A line per thing and metric (raw events up to 6 hours, averages per bucket beyond), or per metric across the things. */
function TimeseriesWidget({ widget, range, rolling, chosen }: WidgetProps) {
  const source = useSource(widget, chosen);
  const metrics = widget.metrics ?? [];
  const things = source.data?.things ?? [];
  const keys = things.map((t) => t.thing_key).join(',');
  const thingKeys = useMemo(() => (keys === '' ? [] : keys.split(',')), [keys]);
  const [columns, setColumns] = useState<Columns | undefined>();
  // Each line's unit (by its label), so that metrics of different units are drawn on scales of their own.
  const [units, setUnits] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | undefined>();
  const [round, setRound] = useState(0);
  const chart = useRef<ChartHandle | undefined>(undefined);
  const caption = useRef<HTMLParagraphElement>(null);
  // The range as it is now, for the subscription's handlers, which a range that slides keeps.
  const start = useRef(range[0]);
  start.current = range[0];
  const end = useRef(range[1]);
  end.current = range[1];
  const rollingNow = useRef(rolling);
  rollingNow.current = rolling;
  // The live events that came while the range is read; undefined when no read of a raw line is under way.
  const arriving = useRef<Message[] | undefined>(undefined);
  /** The raw lines' layout and range as they are now (raw-lines.ts). */
  const rawLines = (): Lines => ({
    things: thingKeys,
    metrics,
    from: start.current,
    to: rollingNow.current ? undefined : end.current,
  });
  // The chart takes what the widget leaves once its legend is drawn whole (use-chart-fit.ts).
  const plot = useRef<HTMLDivElement>(null);
  const { height, leaveOut } = useChartFit(plot, widget.title, columns, widget.layout.h);
  const aggregate = widget.aggregate;
  const mayReadTemplates = useMayRead('thing_template');
  useEffect(() => {
    if (!source.data) return;
    let current = true;
    // A rolling range is read up to the moment of reading: a read again on the subscription's acceptance
    // comes after the range was set.
    const from = range[0];
    const to = rolling ? Math.max(range[1], Math.ceil(Date.now() / 1000)) : range[1];
    // A count has no unit; other aggregates keep their metric's (the source's template's, else its things').
    // A role that may not read templates is not asked for them: its lines share one scale.
    const templates =
      aggregate && widget.source?.thing_template_key ? [widget.source.thing_template_key] : things.map(templateOf);
    const measured = unitsOfTemplates(aggregate === 'count' || mayReadTemplates === false ? [] : templates);
    const load = async (): Promise<Columns> => {
      if (aggregate) {
        const scope = widget.source?.group_key
          ? { group_key: widget.source.group_key }
          : widget.source?.thing_template_key
            ? { thing_template_key: widget.source.thing_template_key }
            : { thing_keys: thingKeys };
        const answered = (await answer(
          api.POST('/api/v3/query/fleet_aggregated_data', {
            body: { ...scope, from, to, metrics, functions: [aggregate], ...buckets(range) } as never,
          }),
        )) as unknown as { time_grouped_result: Record<string, Bucket> };
        const rows = new Map<number, (number | null)[]>();
        for (const [start, bucket] of Object.entries(answered.time_grouped_result ?? {}))
          rows.set(
            Number(start),
            metrics.map((m) => asNumber(bucket[m]?.[aggregate])),
          );
        return toColumns(
          metrics.map((m) => `${aggregate} ${m}`),
          rows,
        );
      }
      const labels = things.flatMap((t) => metrics.map((m) => `${t.name} ${m}`));
      if (range[1] - range[0] <= 6 * 3600) {
        const reads = await Promise.all(
          things.map(async (thing) => {
            const answered = (await answer(
              api.POST('/api/v3/query/thing_data', {
                body: { thing_key: thing.thing_key, from, to, per: 10_000, order: 'asc', metrics } as never,
              }),
            )) as unknown as Record<string, { event_data: ReadEvent[] }>;
            return answered[thing.thing_key]?.event_data ?? [];
          }),
        );
        return rawColumns({ things: thingKeys, metrics }, labels, reads);
      }
      const rows = new Map<number, (number | null)[]>();
      if (things.length > 0) {
        const answered = (await answer(
          api.POST('/api/v3/query/thing_aggregated_data', {
            body: { thing_keys: thingKeys, from, to, metrics, functions: ['avg'], ...buckets(range) } as never,
          }),
        )) as unknown as {
          time_grouped_result: Record<string, Record<string, Record<string, { avg: number | null }>>>;
        };
        for (const [start, bucket] of Object.entries(answered.time_grouped_result ?? {}))
          rows.set(
            Number(start),
            things.flatMap((thing) => metrics.map((m) => bucket[thing.thing_key]?.[m]?.avg ?? null)),
          );
      }
      return toColumns(labels, rows);
    };
    arriving.current = aggregate ? undefined : [];
    Promise.all([load(), measured]).then(
      ([loaded, byTemplate]) => {
        if (!current) return;
        // What came live during the read joins it (the read may have been answered from before it).
        joinArrived(loaded, rawLines(), arriving.current ?? []);
        arriving.current = undefined;
        const unitOf = (template: string | undefined, metric: string) =>
          template === undefined ? undefined : byTemplate.get(template)?.[metric];
        const lines = aggregate
          ? metrics.map((m, i) => [loaded.metrics[i], templates.map((t) => unitOf(t, m)).find(Boolean)])
          : things.flatMap((t, n) =>
              metrics.map((m, i) => [loaded.metrics[n * metrics.length + i], unitOf(templateOf(t), m)]),
            );
        setUnits(Object.fromEntries(lines.filter((line): line is [string, string] => !!line[0] && !!line[1])));
        setError(undefined);
        setColumns(loaded);
      },
      (failure) => {
        if (!current) return;
        arriving.current = undefined;
        setError(failure instanceof Error ? failure.message : String(failure));
      },
    );
    return () => {
      current = false;
    };
  }, [source.data, range[0], range[1], round, metrics.join(','), aggregate]);
  // Live: a raw line takes each event as it comes (drawn once a frame); a fleet line is read again, at
  // most every five seconds, as its buckets are the server's sums. The source, and with it the range,
  // is read again each time the subscription is accepted (on opening as after a lost connection, when
  // it comes to one read with useSource's): what was sent before it is not replayed. The range is read
  // through refs: a rolling range moves every minute, which reads the range again but keeps the
  // subscription.
  const live = useRef(columns);
  live.current = columns;
  // Live points are added without a render: the caption's count is written in place, and so after
  // each read (were it rendered, a read after live points would leave the count they wrote).
  const showCount = () => {
    if (caption.current && live.current)
      caption.current.textContent = pointsCaption(live.current.x.length, aggregate, range);
  };
  useLayoutEffect(showCount, [columns, leaveOut]);
  useEffect(() => {
    if (keys === '') return;
    let later: ReturnType<typeof setTimeout> | undefined;
    const stop = realtime.subscribe(
      'events',
      { thing_keys: thingKeys, metrics },
      (message) => {
        if (message.type !== 'event') return;
        if (aggregate) {
          later ??= setTimeout(() => {
            later = undefined;
            setRound((r) => r + 1);
          }, 5000);
          return;
        }
        arriving.current?.push(message);
        const shown = live.current;
        if (!shown || !addToLines(shown, rawLines(), message)) return;
        chart.current?.draw();
        showCount();
      },
      () => {
        // A range that ended before now gains nothing the subscription could have missed.
        if (rollingNow.current || end.current >= Date.now() / 1000) source.reloadSoon();
      },
    );
    return () => {
      clearTimeout(later);
      stop();
    };
  }, [keys, metrics.join(','), aggregate]);
  // A rolling range (`last`) ends now, as the page reads it again every minute: its chart slides with
  // the clock. A fixed one stays where it is, however near now it ends.
  return (
    // A widget too short for a chart's least height (style.css) takes what it has, and no caption.
    <div class="timeseries" style={leaveOut ? { minHeight: 0 } : undefined}>
      <Failure message={source.error ?? error} />
      <Missing keys={source.data?.missing ?? []} />
      <div class="timeseries-plot" ref={plot}>
        {columns && (
          <Chart
            columns={columns}
            handle={chart}
            height={height}
            span={range}
            slide={rolling}
            units={units}
            leaveOut={leaveOut}
          />
        )}
      </div>
      {columns && !leaveOut && <p class="chart-caption" ref={caption} />}
    </div>
  );
}

/** What one of the fleet's buckets holds, by the aggregate drawn (`3 averages of 15 min`). */
const AGGREGATE_NOUNS: Record<string, string> = {
  avg: 'average',
  min: 'minimum',
  max: 'maximum',
  sum: 'sum',
  count: 'count',
};

/** How many points a chart draws: events, or the fleet's buckets, each the aggregate of a stretch of the range. */
const pointsCaption = (count: number, aggregate: string | undefined, range: [number, number]) =>
  aggregate
    ? `${countOf(count, AGGREGATE_NOUNS[aggregate] ?? 'bucket')} of ${showDuration(bucketSeconds(range))}`
    : countOf(count, 'point');

/** The latest value of one thing's metric, and live ones. */
function useLatest(widget: Widget, chosen: Record<string, string>) {
  const thingKey = resolveKey(widget.thing_key ?? '', chosen);
  const metric = widget.metric ?? '';
  const [latest, update, reset] = useFrameState<{ value: unknown; timestamp: number } | undefined>(undefined);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | undefined>();
  // Retry: the widget is made again, its subscription with it.
  const [round, setRound] = useState(0);
  // What is sent before the subscription is accepted, on opening as after a lost connection, is not
  // replayed (docs/realtime.md): the latest value is read again each time it is accepted.
  useEffect(() => {
    let current = true;
    reset(undefined);
    setMissing(false);
    setError(undefined);
    if (thingKey === '') {
      setMissing(true);
      return;
    }
    const read = () =>
      answer(api.GET('/api/v3/things/{thing_key}', { params: { path: { thing_key: thingKey } } })).then(
        ({ thing }) => {
          if (!current) return;
          setMissing(false);
          setError(undefined);
          const event = thing.last_event;
          const value = event ? pick(event.data, metric) : undefined;
          if (event && value !== undefined && typeof event.timestamp === 'number')
            update((shown) =>
              shown && shown.timestamp > (event.timestamp as number)
                ? shown
                : { value, timestamp: event.timestamp as number },
            );
        },
        // Missing when refused (gone, not the role's to read, no such key); otherwise what is shown
        // stays, with the failure and Retry, and is read again once the subscription is accepted.
        (failure) => {
          if (!current) return;
          if (isRefusal(failure)) setMissing(true);
          else setError(unreachable(failure) ? 'The server cannot be reached.' : messageOf(failure));
        },
      );
    read();
    const stop = realtime.subscribe(
      'events',
      { thing_keys: [thingKey], metrics: [metric] },
      (message) => {
        if (message.type !== 'event' || typeof message.timestamp !== 'number') return;
        const value = pick(message.data, metric);
        const timestamp = message.timestamp;
        if (value === undefined) return;
        setMissing(false);
        update((shown) => (shown && shown.timestamp > timestamp ? shown : { value, timestamp }));
      },
      read,
    );
    return () => {
      current = false;
      stop();
    };
  }, [thingKey, metric, round]);
  return { thingKey, latest, missing, error, retry: () => setRound((r) => r + 1) };
}

function ValueWidget({ widget, chosen }: WidgetProps) {
  const { thingKey, latest, missing, error, retry } = useLatest(widget, chosen);
  if (missing) return <Missing keys={[thingKey || `$${widget.thing_key?.slice(1) ?? ''}`]} />;
  const colour = thresholdColour(widget.thresholds, latest?.value);
  if (error && !latest) return <Failure message={error} retry={retry} />;
  return (
    <p class="dashboard-value">
      <output class="value-figure" style={colour ? { color: colour } : undefined}>
        {latest ? showValue(latest.value) : '–'}
      </output>
      {widget.unit && <span class="value-unit"> {widget.unit}</span>}
      {latest && <small class="hint">{showTime(latest.timestamp)}</small>}
    </p>
  );
}

function GaugeWidget({ widget, chosen }: WidgetProps) {
  const { thingKey, latest, missing, error, retry } = useLatest(widget, chosen);
  if (missing) return <Missing keys={[thingKey || String(widget.thing_key)]} />;
  if (error && !latest) return <Failure message={error} retry={retry} />;
  const min = widget.min ?? 0;
  const max = widget.max ?? 100;
  const value = typeof latest?.value === 'number' ? latest.value : undefined;
  const share = value === undefined ? 0 : Math.min(1, Math.max(0, (value - min) / (max - min)));
  const colour = thresholdColour(widget.thresholds, value) ?? '#1f5fbf';
  // A half circle from the left (min) to the right (max).
  const angle = Math.PI * (1 - share);
  const end = `${60 + 50 * Math.cos(angle)} ${60 - 50 * Math.sin(angle)}`;
  return (
    <div class="dashboard-gauge">
      <svg
        viewBox="0 0 120 70"
        role="img"
        aria-label={`${showValue(value)} on a dial from ${showValue(min)} to ${showValue(max)}`}
      >
        <path d="M 10 60 A 50 50 0 0 1 110 60" fill="none" stroke="#e5e7eb" stroke-width="10" />
        {value !== undefined && (
          <path d={`M 10 60 A 50 50 0 0 1 ${end}`} fill="none" stroke={colour} stroke-width="10" />
        )}
      </svg>
      <p class="dashboard-value">
        <output class="value-figure">{latest ? showValue(latest.value) : '–'}</output>
        {widget.unit && <span class="value-unit"> {widget.unit}</span>}
        <small class="hint">
          {showValue(min)} to {showValue(max)}
        </small>
      </p>
    </div>
  );
}

/** Things of the source, with status and last event kept live. */
function useLiveThings(widget: Widget, chosen: Record<string, string>) {
  const source = useSource(widget, chosen);
  const [things, update, reset] = useFrameState<Thing[]>([]);
  const keys = source.data?.things.map((t) => t.thing_key).join(',') ?? '';
  useEffect(() => reset(source.data?.things ?? []), [source.data]);
  // Subscribed for the things' keys, not for each read of them: a read that finds the same things keeps
  // the subscriptions, and the read the `things` subscription's acceptance asks for (what changed before
  // it is not replayed, docs/realtime.md) ends there.
  useEffect(() => {
    if (keys === '') return;
    const names = keys.split(',');
    const stopEvents = realtime.subscribe('events', { thing_keys: names }, (message) => {
      if (message.type !== 'event' || typeof message.timestamp !== 'number') return;
      const timestamp = message.timestamp;
      update((shown) =>
        shown.map((t) =>
          t.thing_key === message.thing_key &&
          (!t.last_event || typeof t.last_event.timestamp !== 'number' || t.last_event.timestamp <= timestamp)
            ? { ...t, alive: true, last_event: { timestamp, data: message.data as Record<string, never> } }
            : t,
        ),
      );
    });
    const stopThings = realtime.subscribe(
      'things',
      { thing_keys: names },
      (message) => {
        if (message.type !== 'thing') return;
        if (message.change !== 'alive') return source.reloadSoon();
        update((shown) =>
          shown.map((t) => (t.thing_key === message.thing_key ? { ...t, alive: message.alive as boolean } : t)),
        );
      },
      source.reloadSoon,
    );
    return () => {
      stopEvents();
      stopThings();
    };
  }, [keys]);
  return { source, things };
}

/** When a thing last sent: a short time on one line, the whole date and time as its machine-readable value and title. */
function LastEvent({ seconds }: { seconds: number | string | null | undefined }) {
  if (typeof seconds !== 'number') return <>{showTime(seconds)}</>;
  return (
    <time dateTime={new Date(seconds * 1000).toISOString()} title={showTime(seconds)}>
      {showShortTime(seconds)}
    </time>
  );
}

function ThingsWidget({ widget, chosen }: WidgetProps) {
  const { source, things } = useLiveThings(widget, chosen);
  const metrics = widget.metrics ?? [];
  // Each value with its metric's unit from its thing's template, as a time series takes it: things of
  // several templates may measure one metric in different units. Not asked by a role that may not read
  // templates.
  const mayReadTemplates = useMayRead('thing_template');
  const templates = [...new Set(things.map(templateOf))].sort().join(',');
  const units = useLoad(
    async () =>
      mayReadTemplates && metrics.length > 0 ? unitsOfTemplates(templates.split(',')) : new Map<string, Units>(),
    [templates, mayReadTemplates, metrics.length > 0],
  );
  const unitOf = (thing: Thing, metric: string) => units.data?.get(templateOf(thing) ?? '')?.[metric];
  return (
    <>
      <Failure message={source.error} />
      <Missing keys={source.data?.missing ?? []} />
      <table aria-label={widget.title}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">Last event</th>
            {metrics.map((m) => (
              <th key={m} scope="col">
                <BreakableName name={m} />
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {things.map((t) => (
            <tr key={t.thing_key}>
              <td>
                <Link to={`things/${segment(t.thing_key)}`}>
                  <BreakableName name={t.name} />
                </Link>
              </td>
              <td class={t.alive ? 'online' : 'offline'}>{t.alive ? 'Online' : 'Offline'}</td>
              <td class="when">{t.last_event && <LastEvent seconds={t.last_event.timestamp} />}</td>
              {metrics.map((m) => {
                const value = showValue(t.last_event ? pick(t.last_event.data, m) : undefined);
                const unit = value === '' ? undefined : unitOf(t, m);
                return (
                  <td key={m}>
                    {value}
                    {unit && <span class="unit"> {unit}</span>}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function AlertsWidget({ widget, chosen }: WidgetProps) {
  const source = useSource(widget, chosen);
  const keys = source.data?.things.map((t) => t.thing_key) ?? [];
  const status = widget.status ?? ['open', 'acknowledged'];
  const alerts = useLoad(async () => {
    if (keys.length === 0) return [] as Alert[];
    const answered = await answer(
      api.GET('/api/v3/alerts', {
        params: { query: { status, per: 100, order_by: 'timestamp', order: 'desc' } as never },
      }),
    );
    const mine = new Set(keys);
    return answered.alerts.filter((a) => a.thing_key && mine.has(a.thing_key)).slice(0, 20);
  }, [keys.join(','), status.join(',')]);
  // Read again on each acceptance of the subscription (on opening as after a lost connection): what
  // changed before it is not replayed.
  useEffect(
    () => realtime.subscribe('alerts', {}, (m) => m.type === 'alert' && alerts.reloadSoon(), alerts.reloadSoon),
    [],
  );
  return (
    <>
      <Failure message={source.error ?? alerts.error} />
      <Missing keys={source.data?.missing ?? []} />
      {alerts.data && alerts.data.length === 0 && <p>No alerts.</p>}
      {alerts.data && alerts.data.length > 0 && <AlertTable alerts={alerts.data} showThing />}
    </>
  );
}

/** Leaflet is loaded only when a map is drawn. */
let mapModule: Promise<ComponentType<{ things: Thing[] }>> | undefined;

function MapWidgetLoader({ widget, chosen }: WidgetProps) {
  const { source, things } = useLiveThings(widget, chosen);
  const [MapView, setMapView] = useState<ComponentType<{ things: Thing[] }> | undefined>();
  useEffect(() => {
    mapModule ??= import('./map-widget.tsx').then((m) => m.MapWidget);
    mapModule.then((loaded) => setMapView(() => loaded));
  }, []);
  return (
    <>
      <Failure message={source.error} />
      <Missing keys={source.data?.missing ?? []} />
      {MapView ? <MapView things={things} /> : <p aria-busy="true">Loading…</p>}
    </>
  );
}

function TextWidget({ widget }: WidgetProps) {
  return <Markdown text={widget.text ?? ''} />;
}

export const WIDGETS: Record<Widget['type'], ComponentType<WidgetProps>> = {
  timeseries: TimeseriesWidget,
  value: ValueWidget,
  gauge: GaugeWidget,
  things: ThingsWidget,
  alerts: AlertsWidget,
  map: MapWidgetLoader,
  text: TextWidget,
};
