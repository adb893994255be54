import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { TextField } from '../components/field.tsx';
import { answerByField, fieldRefusal, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
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
    // An instruction told live (sent, its status changed) is kept over a read that began before it.
    { keepLive: 'apply' },
  );
  const mayCreate = useAllows('instruction', 'create');
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [definition, setDefinition] = useState('{}');
  const action = useFieldAction(['instruction.name', 'instruction.definition']);
  useEffect(
    () =>
      // What happened before the subscription was accepted (on opening, after a lost connection) is not
      // replayed: the list is read again on each acceptance.
      realtime.subscribe(
        'instructions',
        { thing_keys: [thingKey] },
        (message) => {
          if (message.type !== 'instruction') return;
          const instruction = message.instruction as Instruction;
          list.set((items) => [instruction, ...items.filter((i) => i.instruction_key !== instruction.instruction_key)]);
        },
        list.reloadSoon,
      ),
    [thingKey],
  );
  const send = async (event: Event) => {
    event.preventDefault();
    const done = await action.run(async () => {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(definition) as Record<string, unknown>;
      } catch {
        throw fieldRefusal('instruction.definition', 'The definition must be JSON, such as {"valve": "open"}.');
      }
      await answerByField(
        api.POST('/api/v3/things/{thing_key}/instructions', {
          params: { path: { thing_key: thingKey } },
          body: { instruction: { name, definition: parsed } },
        }),
      );
    });
    if (!done) return;
    setOpen(false);
    setName('');
    list.reload();
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
          <TextField
            label="Instruction name"
            required
            value={name}
            onInput={setName}
            error={action.of('instruction.name')}
          />
          <TextField
            label="Definition"
            hint="JSON the device receives"
            rows={4}
            value={definition}
            onInput={setDefinition}
            error={action.of('instruction.definition')}
          />
          <FormActions action={action} submit="Send" />
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
