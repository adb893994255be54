import type { ComponentChildren } from 'preact';
import type { paths } from '../api/schema';
import { showTime } from '../format.ts';

export type Alert = paths['/api/v3/alerts']['get']['responses'][200]['content']['application/json']['alerts'][number];

/** Alerts as rows: time, type, thing and message (text, never HTML); `actions` adds a cell per alert. */
export function AlertTable(props: {
  alerts: Alert[];
  showThing?: boolean;
  actions?: (alert: Alert) => ComponentChildren;
}) {
  return (
    <table>
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
            <td>{showTime(alert.timestamp)}</td>
            <td>{alert.alert_type_string}</td>
            {props.showThing && <td>{alert.thing_name ?? alert.thing_key ?? ''}</td>}
            <td>{alert.message}</td>
            <td>{alert.status}</td>
            {props.actions && <td>{props.actions(alert)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
