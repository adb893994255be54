import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import type { paths } from '../api/schema';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { Chart, type ChartHandle, type Columns } from '../components/chart.tsx';
import { Field } from '../components/field.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime, showValue } from '../format.ts';
import { type Message, realtime } from '../realtime.ts';
import { Link } from '../router.tsx';

type Thing = paths['/api/v3/things/{thing_key}']['get']['responses'][200]['content']['application/json']['thing'];
type Instruction =
  paths['/api/v3/things/{thing_key}/instructions']['get']['responses'][200]['content']['application/json']['instructions'][number];

/** Ranges of the picker: raw events up to six hours, averages per bucket beyond. */
export const RANGES = [
  { label: 'Last hour', seconds: 3600 },
  { label: 'Last 6 hours', seconds: 6 * 3600 },
  { label: 'Last 24 hours', seconds: 86400, grouping: 'minute', every: 5 },
  { label: 'Last 7 days', seconds: 7 * 86400, grouping: 'hour', every: 1 },
  { label: 'Last 30 days', seconds: 30 * 86400, grouping: 'hour', every: 6 },
] as const;
type Range = (typeof RANGES)[number];

/** thing_data with data_format=array: rows [timestamp, v1, v2, ...] in the order of `metrics`. */
type ThingDataAnswer = Record<string, { metrics: string[]; event_data: [number, ...unknown[]][] }>;
type AggregatedAnswer = {
  time_grouped_result: Record<string, Record<string, Record<string, { avg: number | null }>>>;
};

export function ThingPage({ thingKey }: { thingKey: string }) {
  const thing = useLoad(
    async () =>
      (await answer(api.GET('/api/v3/things/{thing_key}', { params: { path: { thing_key: thingKey } } }))).thing,
    [thingKey],
  );
  useEffect(() => {
    const stop = realtime.subscribe('events', { thing_keys: [thingKey] }, (message) => {
      if (message.type !== 'event') return;
      thing.set((t) => ({
        ...t,
        alive: true,
        last_event: { timestamp: message.timestamp as number, data: message.data as Record<string, never> },
      }));
    });
    return stop;
  }, [thingKey]);
  if (thing.error) {
    return (
      <section>
        <h1>Thing</h1>
        <p role="alert" class="error">
          {thing.error}
        </p>
        <Link to="things">All things</Link>
      </section>
    );
  }
  if (!thing.data) return <p>Loading…</p>;
  const t = thing.data;
  return (
    <section>
      <h1>{t.name}</h1>
      <p>
        <code>{t.thing_key}</code> · {t.thing_template_name} · {t.alive ? 'Online' : 'Offline'}
        {t.description ? ` · ${t.description}` : ''}
      </p>
      <LatestValues thing={t} />
      <Telemetry thingKey={t.thing_key} />
      <ThingAlerts thingKey={t.thing_key} />
      {t.bi_directional && <Instructions thingKey={t.thing_key} />}
    </section>
  );
}

function LatestValues({ thing }: { thing: Pick<Thing, 'last_event'> }) {
  const data = (thing.last_event?.data ?? {}) as Record<string, unknown>;
  const names = Object.keys(data).sort();
  return (
    <section class="panel" aria-labelledby="latest-values">
      <h2 id="latest-values">Latest values</h2>
      {names.length === 0 ? (
        <p>No event yet.</p>
      ) : (
        <>
          <dl class="values">
            {names.map((name) => (
              <>
                <dt>{name}</dt>
                <dd>{showValue(data[name])}</dd>
              </>
            ))}
          </dl>
          <p>
            <small>at {showTime(thing.last_event?.timestamp)}</small>
          </p>
        </>
      )}
    </section>
  );
}

/** Numeric metrics of the range as chart columns; the last hour follows live events. */
function Telemetry({ thingKey }: { thingKey: string }) {
  const [range, setRange] = useState<Range>(RANGES[0]);
  const [columns, setColumns] = useState<Columns | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [count, setCount] = useState(0);
  const chart = useRef<ChartHandle | undefined>(undefined);
  useEffect(() => {
    let current = true;
    // Live events are taken from before the history is read, so that none falls between the two; those
    // that arrive first are added once it is there, unless the history already holds their second.
    let loaded: Columns | undefined;
    const early: Message[] = [];
    const add = (message: Message) => {
      if (!loaded) return;
      const data = message.data as Record<string, unknown>;
      const known = loaded.metrics;
      const fresh = Object.keys(data).filter((m) => typeof data[m] === 'number' && !known.includes(m));
      if (fresh.length > 0) {
        // A metric not seen before: a new chart with a column for it.
        loaded = {
          metrics: [...known, ...fresh],
          x: loaded.x,
          ys: [...loaded.ys, ...fresh.map(() => (loaded as Columns).x.map(() => null))],
        };
        appendEvent(loaded, message.timestamp as number, data, range.seconds);
        setColumns(loaded);
      } else {
        appendEvent(loaded, message.timestamp as number, data, range.seconds);
        chart.current?.draw();
      }
      setCount(loaded.x.length);
    };
    const stop =
      range === RANGES[0]
        ? realtime.subscribe('events', { thing_keys: [thingKey] }, (message) => {
            if (message.type !== 'event') return;
            if (loaded) add(message);
            else early.push(message);
          })
        : undefined;
    setColumns(undefined);
    loadColumns(thingKey, range).then(
      (history) => {
        if (!current) return;
        loaded = history;
        const last = history.x[history.x.length - 1] ?? Number.NEGATIVE_INFINITY;
        setColumns(history);
        setCount(history.x.length);
        setError(undefined);
        for (const message of early) if ((message.timestamp as number) > last) add(message);
      },
      (failure) => current && setError(messageOf(failure)),
    );
    return () => {
      current = false;
      stop?.();
    };
  }, [thingKey, range]);
  return (
    <section class="panel" aria-label="Telemetry">
      <h2>Telemetry</h2>
      <Field label="Range">
        {(id) => (
          <select
            id={id}
            value={range.label}
            onChange={(e) => setRange(RANGES.find((r) => r.label === e.currentTarget.value) ?? RANGES[0])}
          >
            {RANGES.map((r) => (
              <option key={r.label} value={r.label}>
                {r.label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {columns && columns.metrics.length > 0 && <Chart columns={columns} handle={chart} />}
      {columns && (
        <p class="chart-caption">
          {columns.metrics.length === 0
            ? 'No numeric values in this range.'
            : `${count} ${'grouping' in range ? 'buckets' : 'points'} · ${columns.metrics.join(', ')}`}
        </p>
      )}
    </section>
  );
}

function appendEvent(columns: Columns, timestamp: number, data: Record<string, unknown>, seconds: number): void {
  columns.x.push(timestamp);
  columns.metrics.forEach((metric, i) => {
    const value = data[metric];
    columns.ys[i]?.push(typeof value === 'number' ? value : null);
  });
  const start = Date.now() / 1000 - seconds;
  let old = 0;
  while (old < columns.x.length && (columns.x[old] as number) < start) old++;
  if (old > 0) {
    columns.x.splice(0, old);
    for (const y of columns.ys) y.splice(0, old);
  }
}

export async function loadColumns(thingKey: string, range: Range): Promise<Columns> {
  const to = Math.floor(Date.now() / 1000);
  const from = to - range.seconds;
  if (!('grouping' in range)) {
    const answered = (await answer(
      api.POST('/api/v3/query/thing_data', {
        body: { thing_key: thingKey, from, to, per: 10000, order: 'desc', data_format: 'array' },
      }),
    )) as unknown as ThingDataAnswer;
    const block = answered[thingKey] ?? { metrics: [], event_data: [] };
    const rows = [...block.event_data].reverse();
    const numeric = block.metrics
      .map((metric, i) => ({ metric, i }))
      .filter(({ i }) => rows.some((row) => typeof row[i + 1] === 'number'));
    return {
      metrics: numeric.map((m) => m.metric),
      x: rows.map((row) => row[0]),
      ys: numeric.map(({ i }) => rows.map((row) => (typeof row[i + 1] === 'number' ? (row[i + 1] as number) : null))),
    };
  }
  const answered = (await answer(
    api.POST('/api/v3/query/thing_aggregated_data', {
      body: {
        thing_keys: [thingKey],
        from,
        to,
        time_grouping: range.grouping,
        time_grouping_value: range.every,
        functions: ['avg'],
      },
    }),
  )) as unknown as AggregatedAnswer;
  const buckets = Object.entries(answered.time_grouped_result ?? {});
  const metrics = [...new Set(buckets.flatMap(([, things]) => Object.keys(things[thingKey] ?? {})))].sort();
  return {
    metrics,
    x: buckets.map(([start]) => Number(start)),
    ys: metrics.map((metric) => buckets.map(([, things]) => things[thingKey]?.[metric]?.avg ?? null)),
  };
}

function ThingAlerts({ thingKey }: { thingKey: string }) {
  const alerts = useLoad(
    async () =>
      (await answer(api.GET('/api/v3/alerts', { params: { query: { thing_key: thingKey, per: 20 } } }))).alerts,
    [thingKey],
  );
  useEffect(
    () =>
      realtime.subscribe('alerts', { thing_keys: [thingKey] }, (message) => {
        if (message.type !== 'alert') return;
        const alert = message.alert as Alert;
        alerts.set((list) => [alert, ...list.filter((a) => a.alert_key !== alert.alert_key)].slice(0, 20));
      }),
    [thingKey],
  );
  return (
    <section class="panel" aria-labelledby="thing-alerts">
      <h2 id="thing-alerts">Alerts</h2>
      {alerts.error && (
        <p role="alert" class="error">
          {alerts.error}
        </p>
      )}
      {alerts.data && (alerts.data.length === 0 ? <p>No alerts.</p> : <AlertTable alerts={alerts.data} />)}
    </section>
  );
}

function Instructions({ thingKey }: { thingKey: string }) {
  const list = useLoad(
    async () =>
      (
        await answer(
          api.GET('/api/v3/things/{thing_key}/instructions', {
            params: { path: { thing_key: thingKey }, query: { per: 20 } },
          }),
        )
      ).instructions,
    [thingKey],
  );
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [definition, setDefinition] = useState('{}');
  const [error, setError] = useState<string | undefined>();
  useEffect(
    () =>
      realtime.subscribe('instructions', { thing_keys: [thingKey] }, (message) => {
        if (message.type !== 'instruction') return;
        const instruction = message.instruction as Instruction;
        list.set((items) => [instruction, ...items.filter((i) => i.instruction_key !== instruction.instruction_key)]);
      }),
    [thingKey],
  );
  const send = async (event: Event) => {
    event.preventDefault();
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(definition) as Record<string, unknown>;
    } catch {
      setError('The definition must be JSON, such as {"valve": "open"}.');
      return;
    }
    try {
      await answer(
        api.POST('/api/v3/things/{thing_key}/instructions', {
          params: { path: { thing_key: thingKey } },
          body: { instruction: { name, definition: parsed } },
        }),
      );
      setError(undefined);
      setOpen(false);
      setName('');
      list.reload();
    } catch (failure) {
      setError(messageOf(failure));
    }
  };
  return (
    <section class="panel" aria-labelledby="thing-instructions">
      <h2 id="thing-instructions">Instructions</h2>
      {!open && (
        <button type="button" onClick={() => setOpen(true)}>
          Send instruction
        </button>
      )}
      {open && (
        <form onSubmit={send} aria-label="Send instruction">
          <Field label="Instruction name">
            {(id) => <input id={id} required value={name} onInput={(e) => setName(e.currentTarget.value)} />}
          </Field>
          <Field label="Definition" hint="JSON the device receives" error={error}>
            {(id, describedBy) => (
              <textarea
                id={id}
                aria-describedby={describedBy}
                rows={4}
                value={definition}
                onInput={(e) => setDefinition(e.currentTarget.value)}
              />
            )}
          </Field>
          <button type="submit">Send</button>
        </form>
      )}
      {list.data && list.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Instruction</th>
              <th scope="col">Status</th>
              <th scope="col">Sent</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((i) => (
              <tr key={i.instruction_key}>
                <td>{i.name}</td>
                <td>{i.status}</td>
                <td>{showTime(i.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
