import type { ComponentChildren } from 'preact';
import type { paths } from '../api/schema';
import { showTime } from '../format.ts';

export type Alert = paths['/api/v3/alerts']['get']['responses'][200]['content']['application/json']['alerts'][number];

/**
 * Alerts as rows: time, type, thing and message (text, never HTML); `actions` adds a cell per alert. On
 * a phone each alert is a card (style.css, `table.cards`).
 */
export function AlertTable(props: {
  alerts: Alert[];
  showThing?: boolean;
  actions?: (alert: Alert) => ComponentChildren;
}) {
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
        {props.alerts.map((alert) => (
          <tr key={alert.alert_key}>
            <td data-label="Time">{showTime(alert.timestamp)}</td>
            <td data-label="Type">{alert.alert_type_string}</td>
            {props.showThing && <td data-label="Thing">{alert.thing_name ?? alert.thing_key ?? ''}</td>}
            <td data-label="Message">{alert.message}</td>
            <td data-label="Status">{alert.status}</td>
            {props.actions && <td>{props.actions(alert)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
