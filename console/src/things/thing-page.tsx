import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { mayRead, useAllows, useCaller } from '../caller.ts';
import { unitsOfMetrics } from '../components/chart-scales.ts';
import { lazy } from '../components/lazy.tsx';
import { useLoad } from '../components/use-load.ts';
import { realtime } from '../realtime.ts';
import { Link } from '../router.tsx';
import { Instructions } from './instructions.tsx';
import { type EventsAnswer, LATEST_EVENTS, type Latest, LatestValues, mergeLatest } from './latest-values.tsx';
import { ThingActions } from './thing-actions.tsx';
import { ThingAlerts } from './thing-alerts.tsx';

/**
 * The chart and uPlot come in a chunk of their own, fetched as a thing's page opens: while the thing
 * and its template are read, not after them.
 */
const loadTelemetry = () => import('./telemetry.tsx').then((m) => m.Telemetry);
const Telemetry = lazy(loadTelemetry);

export function ThingPage({ thingKey }: { thingKey: string }) {
  useEffect(() => {
    // A failure is shown where the chart goes, when it is asked for again there.
    loadTelemetry().catch(() => undefined);
  }, []);
  const thing = useLoad(
    async () =>
      (await answer(api.GET('/api/v3/things/{thing_key}', { params: { path: { thing_key: thingKey } } }))).thing,
    [thingKey],
    // A read the change feed asked for may land after the thing's first event was shown live: the event
    // still makes it online, with Export and Delete events offered.
    { keepLive: 'apply' },
  );
  const [latest, setLatest] = useState<Latest>({});
  // Connect a device makes a key pair first: offered, as on Things, to a role that may make one.
  const mayConnect = useAllows('key_pair', 'create');
  // What the role may not read is said once, plainly, in place of its panel; the panels wait for the
  // role to be known (read once per session, mostly before the thing), so that none asks in vain.
  const caller = useCaller();
  const [liveRefused, setLiveRefused] = useState<string | undefined>();
  // Counts the deletions of events made here: the latest values and the chart are read again after each.
  const [deletions, setDeletions] = useState(0);
  // Whether the role may read the thing's events (undefined until it is known); a role that may not sees
  // the last event alone.
  const dataReadable = mayRead(caller, 'data');
  useEffect(() => {
    setLatest({});
    setLiveRefused(undefined);
    // Online and Offline follow the thing's alive flips, as on the Things table (docs/realtime.md).
    // What changed before the subscription was accepted (on opening, after a lost connection) is not
    // replayed: the thing is read again.
    const stopThings = realtime.subscribe(
      'things',
      { thing_keys: [thingKey] },
      (message) => {
        if (message.type !== 'thing') return;
        if (message.change === 'alive') thing.set((t) => ({ ...t, alive: message.alive as boolean }));
        else thing.reload();
      },
      thing.reloadSoon,
    );
    return () => stopThings();
  }, [thingKey, deletions]);
  useEffect(() => {
    if (!dataReadable) return;
    let current = true;
    // Latest values: the thing's last event, its events of the last hour, then live ones (docs/console.md).
    // The hour is read again each time the subscription is accepted: a metric that only events sent
    // before it (or while the connection was lost) carried would stay old.
    const readRecent = () => {
      const to = Math.floor(Date.now() / 1000);
      answer(
        api.POST('/api/v3/query/thing_data', {
          body: { thing_key: thingKey, from: to - 3600, to, per: LATEST_EVENTS, order: 'desc' },
        }),
      ).then(
        (answered) => {
          if (!current) return;
          const events = (answered as unknown as EventsAnswer)[thingKey]?.event_data ?? [];
          setLatest((shown) => events.reduce((l, e) => mergeLatest(l, e.timestamp, e.data), shown));
        },
        // A role changed meanwhile: the Telemetry panel shows the API's message.
        () => undefined,
      );
    };
    readRecent();
    const stopEvents = realtime.subscribe(
      'events',
      { thing_keys: [thingKey] },
      (message) => {
        if (message.type === 'error') return setLiveRefused(String(message.message ?? message.code));
        if (message.type !== 'event') return;
        // The first event also makes what needs one (Export, Delete events) offered.
        thing.set((t) => ({
          ...t,
          alive: true,
          last_event: t.last_event ?? {
            timestamp: message.timestamp as number,
            data: message.data as Record<string, unknown>,
          },
        }));
        setLatest((shown) => mergeLatest(shown, message.timestamp, message.data));
      },
      readRecent,
    );
    return () => {
      current = false;
      stopEvents();
    };
  }, [thingKey, deletions, dataReadable]);
  const lastEvent = thing.data?.last_event;
  useEffect(() => {
    if (lastEvent) setLatest((shown) => mergeLatest(shown, lastEvent.timestamp, lastEvent.data));
  }, [lastEvent]);
  const name = thing.data?.name;
  useEffect(() => {
    if (name === undefined) return;
    document.title = `${name} · Thingbase`;
    return () => {
      document.title = 'Things · Thingbase';
    };
  }, [name]);
  // The template's metrics, which the chart draws when it declares any; a role that may not read
  // templates gets every numeric value instead.
  // It is asked once the role is known, and not of a role that may not read it.
  const templateKey = thing.data?.thing_template_key;
  const templateReadable = mayRead(caller, 'thing_template');
  const template = useLoad(async () => {
    if (templateKey === undefined || templateReadable === undefined) return undefined;
    if (!templateReadable) return [];
    const path = { thing_template_key: templateKey };
    return (await answer(api.GET('/api/v3/thing_templates/{thing_template_key}', { params: { path } }))).thing_template
      .metrics;
  }, [templateKey, templateReadable]);
  // A live event with a metric the template did not declare: the Default template learns metrics from
  // events (docs/devices.md, "HTTP"), so it is read again, once for each such metric.
  const asked = useRef(new Set<string>());
  const askTemplateAgain = (metrics: string[]) => {
    const fresh = metrics.filter((metric) => !asked.current.has(metric));
    if (fresh.length === 0) return;
    for (const metric of fresh) asked.current.add(metric);
    template.reload();
  };
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
  // Undefined while the template is read; a role that may not read it gets every numeric value.
  const declared = template.data?.map((m) => m.name) ?? (template.error === undefined ? undefined : []);
  const units = unitsOfMetrics(template.data ?? []);
  return (
    <section>
      <h1>{t.name}</h1>
      <p>
        <code>{t.thing_key}</code> · {t.thing_template_name} · {t.alive ? 'Online' : 'Offline'}
        {t.description ? ` · ${t.description}` : ''}
        {t.tags_array.length > 0 ? ` · Tags: ${t.tags_array.join(', ')}` : ''}
      </p>
      <ThingActions
        thing={t}
        hasEvents={t.last_event !== null}
        onChanged={thing.reload}
        onEventsDeleted={() => {
          setDeletions((n) => n + 1);
          thing.reload();
        }}
      />
      {liveRefused && dataReadable && (
        <p role="alert" class="error">
          Live telemetry is unavailable: {liveRefused}
        </p>
      )}
      <LatestValues
        latest={latest}
        units={units}
        nextStep={
          mayConnect && (
            <>
              Devices send events signed with a key pair:{' '}
              <Link to={`connect?thing=${encodeURIComponent(t.thing_key)}`}>Connect a device</Link> makes one and gives
              the commands, filled in with this thing's key <code>{t.thing_key}</code>, that send its first.
            </>
          )
        }
      />
      <IfReadable may={dataReadable} heading="Telemetry" otherwise="Your role may not read this thing's events.">
        <Telemetry
          key={`${t.thing_key}:${deletions}`}
          thingKey={t.thing_key}
          declared={declared}
          units={units}
          onUndeclared={askTemplateAgain}
        />
      </IfReadable>
      <IfReadable may={mayRead(caller, 'alert')} heading="Alerts" otherwise="Your role may not read alerts.">
        <ThingAlerts thingKey={t.thing_key} />
      </IfReadable>
      {t.bi_directional && (
        <IfReadable
          may={mayRead(caller, 'instruction')}
          heading="Instructions"
          otherwise="Your role may not read instructions."
        >
          <Instructions thingKey={t.thing_key} />
        </IfReadable>
      )}
    </section>
  );
}

/**
 * A panel as the role may read it (`mayRead`): nothing until the role is known, then the panel, or in
 * its place its heading and, in plain words rather than as a refusal, that the role may not read it.
 */
function IfReadable(props: {
  may: boolean | undefined;
  heading: string;
  otherwise: string;
  children: ComponentChildren;
}) {
  if (props.may === undefined) return null;
  if (props.may) return <>{props.children}</>;
  return (
    <section class="panel" aria-label={props.heading}>
      <h2>{props.heading}</h2>
      <p class="muted">{props.otherwise}</p>
    </section>
  );
}
