import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { Failure } from '../components/failure.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { Link, segment } from '../router.tsx';
import { type Action, nameAction } from './kinds.ts';

/**
 * An action's latest delivery attempts, newest first (docs/rules.md, "Delivery attempts"), each with
 * what it was for: the thing whose event fired the rule (a link to its page, for a role that may read
 * things) and the message the delivery carried.
 */
export function ActionDeliveries({ action }: { action: Action }) {
  const mayOpenThings = useAllows('thing', 'read');
  const deliveries = useLoad(
    () =>
      answer(
        api.GET('/api/v3/notification_actions/{notification_action_key}/deliveries', {
          params: { path: { notification_action_key: action.notification_action_key }, query: { per: 10 } },
        }),
      ),
    [action.notification_action_key],
  );
  return (
    <section aria-label={`Deliveries of ${nameAction(action)}`}>
      <h2>{nameAction(action)}</h2>
      <Failure message={deliveries.error} />
      {deliveries.data?.deliveries.length === 0 && <p>No delivery attempts yet.</p>}
      {deliveries.data && deliveries.data.deliveries.length > 0 && (
        <table class="cards">
          <thead>
            <tr>
              <th scope="col">At</th>
              <th scope="col">Thing</th>
              <th scope="col">Message</th>
              <th scope="col">Attempt</th>
              <th scope="col">Result</th>
              <th scope="col">Took</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.data.deliveries.map((d) => (
              <tr key={`${d.delivery_key}-${d.attempt}`}>
                <td>{showTime(d.at)}</td>
                <td data-label="Thing">
                  {d.thing_key && mayOpenThings ? (
                    <Link to={`things/${segment(d.thing_key)}`}>{d.thing_name ?? d.thing_key}</Link>
                  ) : (
                    (d.thing_name ?? d.thing_key ?? '')
                  )}
                </td>
                <td data-label="Message">{d.message ?? ''}</td>
                <td data-label="Attempt">{d.attempt}</td>
                <td data-label="Result">{d.status}</td>
                <td data-label="Took">{d.duration_ms} ms</td>
                <td data-label="Error">{d.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
