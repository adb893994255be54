import { useEffect } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { useLoad } from '../components/use-load.ts';
import { realtime } from '../realtime.ts';

/**
 * A thing's latest alerts, new and changed ones coming in live; read again once the subscription is
 * accepted (on opening as after a lost connection), as what happened before is not replayed.
 */
export function ThingAlerts({ thingKey }: { thingKey: string }) {
  const alerts = useLoad(
    async () =>
      (await answer(api.GET('/api/v3/alerts', { params: { query: { thing_key: thingKey, per: 20 } } }))).alerts,
    [thingKey],
  );
  useEffect(
    () =>
      realtime.subscribe(
        'alerts',
        { thing_keys: [thingKey] },
        (message) => {
          if (message.type !== 'alert') return;
          const alert = message.alert as Alert;
          alerts.set((list) => [alert, ...list.filter((a) => a.alert_key !== alert.alert_key)].slice(0, 20));
        },
        alerts.reloadSoon,
      ),
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
