import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { Pager } from '../components/pager.tsx';
import { useLoad } from '../components/use-load.ts';
import { realtime } from '../realtime.ts';

const PER = 50;
const STATUSES = [
  { value: '', label: 'All' },
  { value: 'open', label: 'Open' },
  { value: 'acknowledged', label: 'Acknowledged' },
  { value: 'cleared', label: 'Cleared' },
];

/** An alert's status; alerts of a server without the alert lifecycle are all open. */
const statusOf = (alert: Alert): string =>
  'status' in alert && typeof alert.status === 'string' ? alert.status : 'open';

/** The latest alerts, newest first; alerts raised or changed while the page is open come in live. */
export function AlertsPage() {
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => answer(api.GET('/api/v3/alerts', { params: { query: { page, per: PER, order: 'desc' } } })),
    [page],
  );
  useEffect(
    () =>
      realtime.subscribe('alerts', {}, (message) => {
        if (message.type !== 'alert' || page !== 1) return;
        const alert = message.alert as Alert;
        list.set((data) => {
          const known = data.alerts.some((a) => a.alert_key === alert.alert_key);
          return {
            ...data,
            total_count: data.total_count + (known ? 0 : 1),
            alerts: known
              ? data.alerts.map((a) => (a.alert_key === alert.alert_key ? alert : a))
              : [alert, ...data.alerts].slice(0, PER),
          };
        });
      }),
    [page],
  );
  const shown = list.data?.alerts.filter((a) => status === '' || statusOf(a) === status) ?? [];
  return (
    <section>
      <h1>Alerts</h1>
      <div class="filters">
        <Field label="Status">
          {(id) => (
            <select id={id} value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              {STATUSES.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Failure message={list.error} />
      {list.data && (shown.length === 0 ? <p>No alerts.</p> : <AlertTable alerts={shown} showThing />)}
      {list.data && <Pager page={page} per={PER} total={list.data.total_count} noun="alerts" onPage={setPage} />}
    </section>
  );
}
