import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';

/**
 * A child organisation's limit of events a second, set by its parent's account admin (docs/api.md,
 * "Organisations and OEM access"; docs/operations.md, "Admission of events"): empty for the server's
 * default, 0 for none.
 */
export function EventsLimit(props: {
  organisationKey: string;
  name: string;
  perSecond: number | null | undefined;
  onSaved: () => void;
}) {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState('');
  const action = useFieldAction(['organisation.events_per_second']);
  if (!open)
    return (
      <button
        type="button"
        class="secondary"
        aria-label={`Limit events of ${props.name}`}
        onClick={() => {
          setValue(props.perSecond === null || props.perSecond === undefined ? '' : String(props.perSecond));
          setOpen(true);
        }}
      >
        Limit events
      </button>
    );
  const submit = async (event: Event) => {
    event.preventDefault();
    const body = { organisation: { events_per_second: value.trim() === '' ? null : Number(value) } };
    const saved = await action.run(() =>
      answerByField(
        api.PUT('/api/v3/organisations/{organisation_key}', {
          params: { path: { organisation_key: props.organisationKey } },
          body,
        }),
      ),
    );
    if (saved) {
      setOpen(false);
      props.onSaved();
    }
  };
  return (
    <form class="inline-form" aria-label={`Events a second of ${props.name}`} onSubmit={submit}>
      <TextField
        label="Events a second"
        type="number"
        min={0}
        hint="empty: the server's default; 0: no limit"
        value={value}
        onInput={setValue}
        error={action.of('organisation.events_per_second')}
      />
      <FormActions action={action} submit="Save" onCancel={() => setOpen(false)} />
    </form>
  );
}
