import { useEffect, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { Field } from '../components/field.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { realtime } from '../realtime.ts';

type Instruction =
  paths['/api/v3/things/{thing_key}/instructions']['get']['responses'][200]['content']['application/json']['instructions'][number];

/** A bi-directional thing's instructions with their status, live, and `Send instruction`. */
export function Instructions({ thingKey }: { thingKey: string }) {
  const list = useLoad(
    async () =>
      (
        await answer(
          api.GET('/api/v3/things/{thing_key}/instructions', {
            params: { path: { thing_key: thingKey }, query: { per: 20 } },
          }),
        )
      ).instructions,
    [thingKey],
  );
  const mayCreate = useAllows('instruction', 'create');
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [definition, setDefinition] = useState('{}');
  const [error, setError] = useState<string | undefined>();
  useEffect(
    () =>
      realtime.subscribe('instructions', { thing_keys: [thingKey] }, (message) => {
        if (message.type !== 'instruction') return;
        const instruction = message.instruction as Instruction;
        list.set((items) => [instruction, ...items.filter((i) => i.instruction_key !== instruction.instruction_key)]);
      }),
    [thingKey],
  );
  const send = async (event: Event) => {
    event.preventDefault();
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(definition) as Record<string, unknown>;
    } catch {
      setError('The definition must be JSON, such as {"valve": "open"}.');
      return;
    }
    try {
      await answer(
        api.POST('/api/v3/things/{thing_key}/instructions', {
          params: { path: { thing_key: thingKey } },
          body: { instruction: { name, definition: parsed } },
        }),
      );
      setError(undefined);
      setOpen(false);
      setName('');
      list.reload();
    } catch (failure) {
      setError(messageOf(failure));
    }
  };
  return (
    <section class="panel" aria-labelledby="thing-instructions">
      <h2 id="thing-instructions">Instructions</h2>
      {list.error && (
        <p role="alert" class="error">
          {list.error}
        </p>
      )}
      {!open && mayCreate && (
        <button type="button" onClick={() => setOpen(true)}>
          Send instruction
        </button>
      )}
      {open && (
        <form onSubmit={send} aria-label="Send instruction">
          <Field label="Instruction name">
            {(id) => <input id={id} required value={name} onInput={(e) => setName(e.currentTarget.value)} />}
          </Field>
          <Field label="Definition" hint="JSON the device receives" error={error}>
            {(id, describedBy) => (
              <textarea
                id={id}
                aria-describedby={describedBy}
                rows={4}
                value={definition}
                onInput={(e) => setDefinition(e.currentTarget.value)}
              />
            )}
          </Field>
          <button type="submit">Send</button>
        </form>
      )}
      {list.data && list.data.length > 0 && (
        <table class="cards">
          <thead>
            <tr>
              <th scope="col">Instruction</th>
              <th scope="col">Status</th>
              <th scope="col">Sent</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((i) => (
              <tr key={i.instruction_key}>
                <td>{i.name}</td>
                <td data-label="Status">{i.status}</td>
                <td data-label="Sent">{showTime(i.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
