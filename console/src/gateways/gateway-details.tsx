import { answer, api } from '../api/client.ts';
import { Failure } from '../components/failure.tsx';
import { useLoad } from '../components/use-load.ts';
import type { Gateway } from './gateway-form.tsx';

/** The JSON text of a `data:application/json;base64,...` URI, as the configuration endpoint answers it. */
function decodeDataUri(uri: string): string {
  const base64 = uri.slice(uri.indexOf(',') + 1);
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  return JSON.stringify(JSON.parse(new TextDecoder().decode(bytes)), null, 2);
}

/** A gateway's adapters, and the configuration document the gateway is handed (docs/gateways.md). */
export function GatewayDetails({ gateway }: { gateway: Gateway }) {
  const configuration = useLoad(
    async () =>
      decodeDataUri(
        (
          await answer(
            api.GET('/api/v3/gateway/{gateway_key}/configuration', {
              params: { path: { gateway_key: gateway.gateway_key } },
            }),
          )
        ).result,
      ),
    [gateway.gateway_key],
  );
  return (
    <section aria-label={`Details of ${gateway.name}`}>
      <h2>Adapters</h2>
      {gateway.adapters.length === 0 ? (
        <p>No adapters.</p>
      ) : (
        <table class="cards">
          <thead>
            <tr>
              <th scope="col">Adapter</th>
              <th scope="col">Type</th>
              <th scope="col">Enabled</th>
              <th scope="col">Configuration</th>
            </tr>
          </thead>
          <tbody>
            {gateway.adapters.map((adapter) => (
              <tr key={adapter.adapter_pid}>
                <td>
                  <code>{adapter.adapter_pid}</code>
                </td>
                <td data-label="Type">{adapter.type ?? ''}</td>
                <td data-label="Enabled">{adapter.enabled ? 'Yes' : 'No'}</td>
                <td data-label="Configuration">
                  <code>{adapter.configuration}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Configuration</h2>
      <p class="muted">The document the gateway is handed when it asks for its configuration.</p>
      <Failure message={configuration.error} />
      {configuration.data && (
        <figure>
          <figcaption>Configuration of {gateway.name}</figcaption>
          <pre>{configuration.data}</pre>
        </figure>
      )}
    </section>
  );
}
