import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { type Alert, AlertTable } from '../components/alert-table.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Field, SelectField } from '../components/field.tsx';
import { Pager } from '../components/pager.tsx';
import { useLoad } from '../components/use-load.ts';
import { realtime } from '../realtime.ts';
import { choiceOf, currentQuery, keepQuery, Link } from '../router.tsx';

type StatusFilter = NonNullable<NonNullable<paths['/api/v3/alerts']['get']['parameters']['query']>['status']>[number];

const PER = 50;
const STATUSES = [
  ['', 'All'],
  ['open', 'Open'],
  ['acknowledged', 'Acknowledged'],
  ['cleared', 'Cleared'],
] as const;

/**
 * Whether the list filtered on `status` (`''`: all of them) and `thing` (a thing's key; `''`: every
 * thing's) holds `alert`.
 */
const listedUnder = (status: string, thing: string, alert: Alert) =>
  (status === '' || alert.status === status) && (thing === '' || alert.thing_key === thing);

/** Alerts in the list's order: newest `timestamp` (epoch seconds) first (docs/rules.md, Alerts). */
const byTime = (alerts: Alert[]) => [...alerts].sort((a, b) => Number(b.timestamp) - Number(a.timestamp));

/** The latest alerts, newest first; alerts raised or changed while the page is open come in live. */
export function AlertsPage() {
  // The filter and page live in the query string, so that Back (or a link: the overview's) finds them.
  // A status the list does not offer (`?status=all`, an old link) shows them all.
  const [status, setStatus] = useState<string>(() => choiceOf(STATUSES, currentQuery().get('status')));
  // One thing's alerts (`?thing=<key>`, a thing's page links there), or every thing's.
  const [thing, setThing] = useState(() => currentQuery().get('thing') ?? '');
  // Acknowledge and Clear change the alert: offered to roles that may update alerts.
  const mayUpdate = useAllows('alert', 'update');
  const [page, setPage] = useState(() => Math.max(1, Number(currentQuery().get('page')) || 1));
  const [comment, setComment] = useState('');
  const [failure, setFailure] = useState<string | undefined>();
  useEffect(() => keepQuery({ status, thing, page: page > 1 ? String(page) : '' }), [status, thing, page]);
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/alerts', {
          params: {
            query: {
              page,
              per: PER,
              order: 'desc',
              ...(status ? { status: [status as StatusFilter] } : {}),
              ...(thing ? { thing_key: thing } : {}),
            },
          },
        }),
      ),
    [page, status, thing],
    // An alert told live while the page is read is counted in the total: the page is read again rather
    // than the alert counted twice.
    { keepLive: 'readAgain' },
  );
  // The page as last shown, for the live updates to tell which alerts it lists: one subscription serves
  // every filter and page.
  const view = useRef({ data: list.data, page, status, thing });
  view.current = { data: list.data, page, status, thing };
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
      // An alert that no longer has the status filtered on leaves the list: the page is read again.
      if (!listedUnder(status, thing, answered.alert)) list.reload();
      else
        list.set((data) => ({
          ...data,
          alerts: data.alerts.map((a) => (a.alert_key === alert.alert_key ? answered.alert : a)),
        }));
    } catch (error) {
      setFailure(messageOf(error));
    }
  };
  // Live changes touch only what this page shows: an alert listed here changes in place; a new one
  // counts in the total and, on the first page, takes its place by time. An alert that leaves or joins
  // the filtered status changes which alerts the pages hold: the page is read again. So does the
  // subscription's acceptance, on opening as after a lost connection: what happened before it is not
  // replayed (docs/realtime.md).
  useEffect(
    () =>
      realtime.subscribe(
        'alerts',
        {},
        (message) => {
          const { data, page, status, thing } = view.current;
          if (message.type !== 'alert' || !data) return;
          const alert = message.alert as Alert;
          const listed = listedUnder(status, thing, alert);
          const shown = data.alerts.some((a) => a.alert_key === alert.alert_key);
          if (shown && listed) {
            list.set((old) => ({
              ...old,
              alerts: old.alerts.map((a) => (a.alert_key === alert.alert_key ? alert : a)),
            }));
          } else if (shown || (message.change === 'updated' && status !== '' && listed)) {
            list.reload();
          } else if (message.change === 'created' && listed) {
            list.set((old) => ({
              ...old,
              total_count: old.total_count + 1,
              alerts: page === 1 ? byTime([alert, ...old.alerts]).slice(0, PER) : old.alerts,
            }));
          }
        },
        list.reloadSoon,
      ),
    [],
  );
  const shown = list.data?.alerts ?? [];
  // The filtered thing's name, as its alerts tell it.
  const thingName = thing ? shown.find((alert) => alert.thing_key === thing)?.thing_name : undefined;
  return (
    <section>
      <h1>Alerts</h1>
      <div class="filters">
        <SelectField
          label="Status"
          value={status}
          options={STATUSES}
          onChange={(value) => {
            setStatus(value);
            setPage(1);
          }}
        />
        {/* Beside alerts to act on; kept while it holds text, should they go live as it is typed. */}
        {mayUpdate && (shown.length > 0 || comment !== '') && (
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
        )}
      </div>
      {thing && (
        <p class="filtered">
          Alerts of {thingName ? <strong>{thingName}</strong> : 'the thing'} (<code>{thing}</code>).{' '}
          <button
            type="button"
            class="secondary"
            onClick={() => {
              setThing('');
              setPage(1);
            }}
          >
            Show every thing's alerts
          </button>
        </p>
      )}
      <Failure message={list.error ?? failure} />
      {list.data &&
        (shown.length === 0 ? (
          thing ? (
            <p>No alerts of this thing{status ? ' with this status' : ''}.</p>
          ) : (
            <EmptyState title={status ? `No ${status} alerts` : 'No alerts'}>
              Alerts are raised by <Link to="rules">rules</Link> when a thing's events meet their condition, and by
              devices themselves; they are listed here, live, to be acknowledged and cleared.
            </EmptyState>
          )
        ) : (
          <AlertTable
            alerts={shown}
            showThing
            actions={
              mayUpdate
                ? (alert, describedBy) => (
                    <>
                      {alert.status === 'open' && (
                        <button
                          type="button"
                          class="secondary"
                          aria-describedby={describedBy}
                          onClick={() => act(alert, 'acknowledge')}
                        >
                          Acknowledge
                        </button>
                      )}{' '}
                      {alert.status !== 'cleared' && (
                        <button
                          type="button"
                          class="secondary"
                          aria-describedby={describedBy}
                          onClick={() => act(alert, 'clear')}
                        >
                          Clear
                        </button>
                      )}
                    </>
                  )
                : undefined
            }
          />
        ))}
      {list.data && list.data.total_count > 0 && (
        <Pager page={page} per={PER} total={list.data.total_count} noun="alerts" onPage={setPage} />
      )}
    </section>
  );
}
