import { useEffect } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useMayRead } from '../caller.ts';
import { AlertTable } from '../components/alert-table.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Figures } from '../components/figures.tsx';
import { lazyPage } from '../components/lazy-page.tsx';
import { useLoad } from '../components/use-load.ts';
import { realtime } from '../realtime.ts';
import { Link } from '../router.tsx';
import { FirstSteps } from './first-steps.tsx';

/** The chart library is downloaded only when the chart is drawn. */
const EventsChart = lazyPage(() => import('./events-chart.tsx').then((m) => m.EventsChart));

const RECENT_ALERTS = 5;
/** The window of the last hour slides: read again every minute even when nothing is pushed. */
const SLIDE_MS = 60_000;

/**
 * How the fleet is doing: things online and offline, open alerts and events received in the last hour
 * (GET /api/v3/fleet_summary and the open alerts' total), kept live by realtime push: a thing's status,
 * an event or an alert reads the figures again, at most once a second however many arrive.
 */
export function OverviewPage() {
  const summary = useLoad(async () => (await answer(api.GET('/api/v3/fleet_summary', {}))).fleet_summary, []);
  // The open alerts are asked for once the role is known, and only by a role that may read them.
  const mayReadAlerts = useMayRead('alert');
  const alerts = useLoad(
    async () =>
      mayReadAlerts
        ? answer(
            api.GET('/api/v3/alerts', {
              params: { query: { status: ['open'], per: RECENT_ALERTS, order_by: 'timestamp', order: 'desc' } },
            }),
          )
        : undefined,
    [mayReadAlerts],
  );
  const alertsUnread = alerts.refused || mayReadAlerts === false;
  // Subscribed once the figures are shown: a `things` subscription has the server read every thing of
  // the organisation first, which would hold up the first figures of a large fleet. Every message of
  // these subscriptions reads the figures again, at most once a second: their acceptance too (on
  // subscribing as after a lost connection), which catches what changed before it.
  const shown = summary.data !== undefined;
  useEffect(() => {
    if (!shown) return;
    const readSummary = () => summary.reloadSoon();
    const ends = [realtime.subscribe('things', {}, readSummary), realtime.subscribe('events', {}, readSummary)];
    const slide = setInterval(readSummary, SLIDE_MS);
    return () => {
      clearInterval(slide);
      for (const end of ends) end();
    };
  }, [shown]);
  // Apart: the role becoming known does not renew the costly `things` subscription.
  useEffect(() => {
    if (shown && mayReadAlerts) return realtime.subscribe('alerts', {}, () => alerts.reloadSoon());
  }, [shown, mayReadAlerts]);
  const fleet = summary.data;
  const count = (n: number | undefined) => (n === undefined ? undefined : String(n));
  return (
    <section>
      <h1>Overview</h1>
      <Failure message={summary.error} />
      {!summary.error && (
        <Figures
          label="Fleet"
          figures={[
            { name: 'Things', value: count(fleet?.things) },
            { name: 'Online', value: count(fleet?.online) },
            { name: 'Offline', value: count(fleet?.offline) },
            { name: 'Open alerts', value: alerts.error || alertsUnread ? '–' : count(alerts.data?.total_count) },
            { name: 'Events in the last hour', value: count(fleet?.events_last_hour) },
          ]}
        />
      )}
      {fleet && <FirstSteps hasThings={fleet.things > 0} onChange={() => summary.reloadSoon()} />}
      {fleet && (
        <section aria-labelledby="events-per-minute" class="panel">
          <h2 id="events-per-minute">Events received per minute</h2>
          <EventsChart minutes={fleet.events_per_minute} />
        </section>
      )}
      <section aria-labelledby="recent-alerts">
        <h2 id="recent-alerts">Open alerts</h2>
        {alertsUnread ? <p class="muted">Your role may not read alerts.</p> : <Failure message={alerts.error} />}
        {alerts.data &&
          (alerts.data.alerts.length === 0 ? (
            <EmptyState title="No open alerts">
              Alerts that rules or devices raise show here until they are acknowledged or cleared.
            </EmptyState>
          ) : (
            <>
              <AlertTable alerts={alerts.data.alerts} showThing />
              <Link to="alerts?status=open">All open alerts</Link>
            </>
          ))}
      </section>
    </section>
  );
}
