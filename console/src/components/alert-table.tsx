import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { showTime } from '../format.ts';
import { Link, segment } from '../router.tsx';

export type Alert = paths['/api/v3/alerts']['get']['responses'][200]['content']['application/json']['alerts'][number];

/**
 * Alerts as rows: time, type, thing (a link to its page, for a role that may read things), message (text, never HTML) and status, with
 * who acknowledged and cleared the alert, when, and the comment given; `actions` adds a cell per alert.
 * On a phone each alert is a card (style.css, `table.cards`). The buttons of `actions` keep their short
 * names (`Acknowledge`, the same on every row) and take `describedBy`, the ids of the row's thing, message
 * and time, so that a screen reader tells one row's `Acknowledge` from the next.
 */
export function AlertTable(props: {
  alerts: Alert[];
  showThing?: boolean;
  actions?: (alert: Alert, describedBy: string) => ComponentChildren;
}) {
  const mayOpenThings = useAllows('thing', 'read');
  const id = useId();
  return (
    <table class="cards">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Type</th>
          {props.showThing && <th scope="col">Thing</th>}
          <th scope="col">Message</th>
          <th scope="col">Status</th>
          {props.actions && <th scope="col">Actions</th>}
        </tr>
      </thead>
      <tbody>
        {props.alerts.map((alert, row) => (
          <tr key={alert.alert_key}>
            <td data-label="Time" id={`${id}-${row}-time`} class="when">
              {showTime(alert.timestamp)}
            </td>
            <td data-label="Type">{alert.alert_type_string}</td>
            {props.showThing && (
              <td data-label="Thing" id={`${id}-${row}-thing`}>
                {alert.thing_key && mayOpenThings ? (
                  <Link to={`things/${segment(alert.thing_key)}`}>{alert.thing_name ?? alert.thing_key}</Link>
                ) : (
                  (alert.thing_name ?? alert.thing_key ?? '')
                )}
              </td>
            )}
            <td data-label="Message" id={`${id}-${row}-message`}>
              {alert.message}
            </td>
            <td data-label="Status">
              {alert.status}
              <Handled alert={alert} />
            </td>
            {props.actions && (
              <td class="row-actions">
                {props.actions(
                  alert,
                  [props.showThing && `${id}-${row}-thing`, `${id}-${row}-message`, `${id}-${row}-time`]
                    .filter(Boolean)
                    .join(' '),
                )}
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Who took a step (an e-mail address, or `its rule`), as `by someone`. */
const byWhom = (by: string | null) => (by ? `by ${by === 'rule' ? 'its rule' : by}` : '');

/**
 * Under the status: who took the alert there and when, who acknowledged a cleared alert first and
 * when, and the last comment given with either (docs/rules.md, "Alert lifecycle"). Nothing for an open
 * alert. A line each, so that the column stays narrow.
 */
function Handled({ alert }: { alert: Alert }) {
  const when = (at: number | string | null) => (at === null ? '' : showTime(at));
  const lines =
    alert.status === 'acknowledged'
      ? [byWhom(alert.acknowledged_by), when(alert.acknowledged_at)]
      : alert.status === 'cleared'
        ? [
            byWhom(alert.cleared_by),
            when(alert.cleared_at),
            alert.acknowledged_by && `acknowledged ${byWhom(alert.acknowledged_by)}`,
            when(alert.acknowledged_at),
          ]
        : [];
  if (alert.comment) lines.push(`Comment: ${alert.comment}`);
  const shown = lines.filter(Boolean);
  if (shown.length === 0) return null;
  return (
    <div class="alert-handled">
      {shown.map((line, i) => (
        // Lines may repeat (two steps in the same second): their place is their key.
        <div key={i}>{line}</div>
      ))}
    </div>
  );
}
