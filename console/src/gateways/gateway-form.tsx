import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldSubmit } from '../components/field-errors.ts';
import { FormButtons } from '../components/form-buttons.tsx';

export type Gateway =
  paths['/api/v3/gateway']['get']['responses'][200]['content']['application/json']['gateway'][number];
type Adapter = Gateway['adapters'][number];

/** The fields whose refusal the API names (`gateway.name`), each said under its field. */
const FIELDS = ['gateway.name', 'gateway.gateway_type', 'gateway.gateway_version', 'gateway.tags'];
/** The API's name of a field of the adapter at `index` (`gateway.adapters.0.configuration`). */
const adapterParam = (index: number, field: 'type' | 'configuration') => `gateway.adapters.${index}.${field}`;

/** Text of an optional field: empty is null (the API clears it). */
const orNull = (text: string): string | null => (text.trim() === '' ? null : text.trim());

/**
 * A gateway and its adapters (docs/gateways.md). Each adapter's `adapter_pid` is sent back so that it
 * is kept; a new adapter gets one from the server. Configuration is JSON text, checked by the API.
 */
export function GatewayForm({ gateway, onDone }: { gateway: Gateway | undefined; onDone: (saved: boolean) => void }) {
  const [name, setName] = useState(gateway?.name ?? '');
  const [type, setType] = useState(gateway?.gateway_type ?? '');
  const [version, setVersion] = useState(gateway?.gateway_version ?? '');
  const [tags, setTags] = useState(gateway?.tags ?? '');
  const [adapters, setAdapters] = useState<Partial<Adapter>[]>(gateway?.adapters ?? []);
  const change = (index: number, changes: Partial<Adapter>) =>
    setAdapters((list) => list.map((adapter, i) => (i === index ? { ...adapter, ...changes } : adapter)));
  const fieldParams = [
    ...FIELDS,
    ...adapters.flatMap((_, i) => [adapterParam(i, 'type'), adapterParam(i, 'configuration')]),
  ];
  const submit = useFieldSubmit(fieldParams, async () => {
    const fields = {
      name,
      gateway_type: orNull(type),
      gateway_version: orNull(version),
      tags,
      adapters: adapters.map((a) => ({
        type: orNull(a.type ?? ''),
        configuration: a.configuration ?? '{}',
        enabled: a.enabled ?? true,
        ...(a.adapter_pid ? { adapter_pid: a.adapter_pid } : {}),
      })),
    };
    if (gateway) {
      await answerByField(
        api.PUT('/api/v3/gateway/{gateway_key}', {
          params: { path: { gateway_key: gateway.gateway_key } },
          body: { gateway: fields },
        }),
      );
    } else {
      await answerByField(api.POST('/api/v3/gateway', { body: { gateway: fields } }));
    }
    onDone(true);
  });
  const title = gateway ? `Edit ${gateway.name}` : 'New gateway';
  return (
    <form onSubmit={submit.onSubmit} class="panel" aria-label={title}>
      <h2>{title}</h2>
      <TextField label="Name" required value={name} onInput={setName} error={submit.of('gateway.name')} />
      <TextField
        label="Gateway type"
        hint="such as modbus; optional"
        value={type}
        onInput={setType}
        error={submit.of('gateway.gateway_type')}
      />
      <TextField
        label="Gateway version"
        value={version}
        onInput={setVersion}
        error={submit.of('gateway.gateway_version')}
      />
      <TextField label="Tags" hint="comma-separated" value={tags} onInput={setTags} error={submit.of('gateway.tags')} />
      <fieldset>
        <legend>Adapters</legend>
        {adapters.length === 0 && <p>No adapters.</p>}
        {adapters.map((adapter, i) => (
          <fieldset class="adapter" key={adapter.adapter_pid ?? `new-${i}`} aria-label={`Adapter ${i + 1}`}>
            <TextField
              label="Adapter type"
              value={adapter.type ?? ''}
              onInput={(v) => change(i, { type: v })}
              error={submit.of(adapterParam(i, 'type'))}
            />
            <TextField
              label="Configuration"
              hint="JSON, such as {&quot;host&quot;: &quot;10.0.0.5&quot;}"
              rows={2}
              value={adapter.configuration ?? '{}'}
              onInput={(configuration) => change(i, { configuration })}
              error={submit.of(adapterParam(i, 'configuration'))}
            />
            <label>
              <input
                type="checkbox"
                checked={adapter.enabled ?? true}
                onChange={(e) => change(i, { enabled: e.currentTarget.checked })}
              />{' '}
              Enabled
            </label>
            <button
              type="button"
              class="secondary"
              aria-label={`Remove adapter ${i + 1}`}
              onClick={() => setAdapters((list) => list.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </fieldset>
        ))}
        <button
          type="button"
          class="secondary"
          onClick={() => setAdapters((list) => [...list, { type: '', configuration: '{}', enabled: true }])}
        >
          Add adapter
        </button>
      </fieldset>
      <Failure message={submit.error} />
      <FormButtons busy={submit.busy} onCancel={() => onDone(false)} />
    </form>
  );
}
