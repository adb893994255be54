import { useEffect } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { useLoad } from '../components/use-load.ts';
import { countOf } from '../format.ts';
import { realtime } from '../realtime.ts';
import { Link } from '../router.tsx';

/** The alerts the panel shows: the latest, as the page would be crowded by more. */
const SHOWN = 20;

/**
 * A thing's latest alerts, new and changed ones coming in live; read again once the subscription is
 * accepted (on opening as after a lost connection), as what happened before is not replayed. Under
 * them, how many there are and a link to them all on the Alerts page, where they are acknowledged and
 * cleared.
 */
export function ThingAlerts({ thingKey }: { thingKey: string }) {
  const alerts = useLoad(
    async () => {
      const answered = await answer(
        api.GET('/api/v3/alerts', { params: { query: { thing_key: thingKey, per: SHOWN, order: 'desc' } } }),
      );
      return { list: answered.alerts, total: answered.total_count };
      // An alert told live while the list is read counts in the total: the list is read again rather than
      // the alert counted twice.
    },
    [thingKey],
    { keepLive: 'readAgain' },
  );
  useEffect(
    () =>
      realtime.subscribe(
        'alerts',
        { thing_keys: [thingKey] },
        (message) => {
          if (message.type !== 'alert') return;
          const alert = message.alert as Alert;
          alerts.set(({ list, total }) => ({
            list: [alert, ...list.filter((a) => a.alert_key !== alert.alert_key)].slice(0, SHOWN),
            total: message.change === 'created' ? total + 1 : total,
          }));
        },
        alerts.reloadSoon,
      ),
    [thingKey],
  );
  const mayUpdate = useAllows('alert', 'update');
  const shown = alerts.data?.list ?? [];
  const total = alerts.data?.total ?? 0;
  return (
    <section class="panel" aria-labelledby="thing-alerts">
      <h2 id="thing-alerts">Alerts</h2>
      {alerts.error && (
        <p role="alert" class="error">
          {alerts.error}
        </p>
      )}
      {alerts.data && (shown.length === 0 ? <p>No alerts.</p> : <AlertTable alerts={shown} />)}
      {total > 0 && (
        <p>
          {total > shown.length ? `The latest ${shown.length} of ${countOf(total, 'alert')}. ` : ''}
          <Link to={`alerts?thing=${encodeURIComponent(thingKey)}`}>All alerts of this thing</Link>
          {mayUpdate ? ', to acknowledge and clear them.' : '.'}
        </p>
      )}
    </section>
  );
}
