import { useEffect, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import type { paths } from '../api/schema';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { Pager } from '../components/pager.tsx';
import { useLoad } from '../components/use-load.ts';
import { realtime } from '../realtime.ts';

type StatusFilter = NonNullable<NonNullable<paths['/api/v3/alerts']['get']['parameters']['query']>['status']>[number];

const PER = 50;
const STATUSES = [
  { value: '', label: 'All' },
  { value: 'open', label: 'Open' },
  { value: 'acknowledged', label: 'Acknowledged' },
  { value: 'cleared', label: 'Cleared' },
];

/** The latest alerts, newest first; alerts raised or changed while the page is open come in live. */
export function AlertsPage() {
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const [comment, setComment] = useState('');
  const [failure, setFailure] = useState<string | undefined>();
  useEffect(() => setPage(1), [status]);
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/alerts', {
          params: {
            query: { page, per: PER, order: 'desc', ...(status ? { status: [status as StatusFilter] } : {}) },
          },
        }),
      ),
    [page, status],
  );
  const act = async (alert: Alert, step: 'acknowledge' | 'clear') => {
    const body = comment.trim() ? { comment: comment.trim() } : {};
    const params = { path: { alert_key: alert.alert_key } };
    try {
      const answered = await answer(
        step === 'acknowledge'
          ? api.POST('/api/v3/alerts/{alert_key}/acknowledge', { params, body })
          : api.POST('/api/v3/alerts/{alert_key}/clear', { params, body }),
      );
      setFailure(undefined);
      setComment('');
      list.set((data) => ({
        ...data,
        alerts: data.alerts.map((a) => (a.alert_key === alert.alert_key ? answered.alert : a)),
      }));
    } catch (error) {
      setFailure(messageOf(error));
    }
  };
  useEffect(
    () =>
      realtime.subscribe('alerts', {}, (message) => {
        if (message.type !== 'alert' || page !== 1) return;
        const alert = message.alert as Alert;
        list.set((data) => {
          const known = data.alerts.some((a) => a.alert_key === alert.alert_key);
          if (!known && status !== '' && alert.status !== status) return data;
          return {
            ...data,
            total_count: data.total_count + (known ? 0 : 1),
            alerts: known
              ? data.alerts.map((a) => (a.alert_key === alert.alert_key ? alert : a))
              : [alert, ...data.alerts].slice(0, PER),
          };
        });
      }),
    [page, status],
  );
  const shown = list.data?.alerts ?? [];
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
        <Field label="Comment" hint="optional: kept with the next Acknowledge or Clear">
          {(id, describedBy) => (
            <input
              id={id}
              aria-describedby={describedBy}
              value={comment}
              onInput={(e) => setComment(e.currentTarget.value)}
            />
          )}
        </Field>
      </div>
      <Failure message={list.error ?? failure} />
      {list.data &&
        (shown.length === 0 ? (
          <p>No alerts.</p>
        ) : (
          <AlertTable
            alerts={shown}
            showThing
            actions={(alert) => (
              <>
                {alert.status === 'open' && (
                  <button type="button" onClick={() => act(alert, 'acknowledge')}>
                    Acknowledge
                  </button>
                )}{' '}
                {alert.status !== 'cleared' && (
                  <button type="button" onClick={() => act(alert, 'clear')}>
                    Clear
                  </button>
                )}
              </>
            )}
          />
        ))}
      {list.data && <Pager page={page} per={PER} total={list.data.total_count} noun="alerts" onPage={setPage} />}
    </section>
  );
}
