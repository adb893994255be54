import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

/**
 * A labelled control: the label names it exactly (its text only), and a hint or the API's message
 * about it is tied to it as its description. The control is given its id, the id of what describes
 * it, and its `aria-invalid` (true while there is a message about it).
 */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  error?: string | undefined;
  children: (id: string, describedBy: string | undefined, invalid: true | undefined) => ComponentChildren;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const describedBy = props.hint || props.error ? hintId : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, describedBy, props.error ? true : undefined)}
      {(props.hint || props.error) && (
        <small id={hintId} class={props.error ? 'error' : undefined} role={props.error ? 'alert' : undefined}>
          {props.error ?? props.hint}
        </small>
      )}
    </div>
  );
}

/** A labelled text input (or number, date...) with its hint or the API's message: the common case of Field. */
export function InputField(props: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  type?: 'text' | 'number' | 'datetime-local';
  hint?: ComponentChildren;
  error?: string | undefined;
  required?: boolean;
  min?: number;
}) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(id, describedBy, invalid) => (
        <input
          id={id}
          // Preact types each input type's attributes apart; these three take the same ones.
          type={(props.type ?? 'text') as 'text'}
          required={props.required}
          min={props.min}
          aria-describedby={describedBy}
          aria-invalid={invalid}
          value={props.value}
          onInput={(e) => props.onInput(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}
