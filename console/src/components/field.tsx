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

/**
 * A labelled text control with its hint or the API's message: the common case of Field. One line (an
 * input of `type`: text, a number, a date...), or several where `rows` is given (a textarea).
 */
export function TextField(props: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  type?: 'text' | 'number' | 'datetime-local' | 'password' | 'search' | 'color';
  rows?: number;
  hint?: ComponentChildren;
  error?: string | undefined;
  required?: boolean;
  min?: number;
  /** A number's step: `any` takes decimals. */
  step?: 'any';
  autoComplete?: string;
  /** The id of a `datalist` of values to suggest. */
  list?: string;
}) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(id, describedBy, invalid) => {
        const shared = {
          id,
          required: props.required,
          'aria-describedby': describedBy,
          'aria-invalid': invalid,
          value: props.value,
          onInput: (e: Event) => props.onInput((e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value),
        };
        return props.rows === undefined ? (
          <input
            {...shared}
            // Preact types each input type's attributes apart; these take the same ones.
            type={(props.type ?? 'text') as 'text'}
            min={props.min}
            step={props.step}
            autocomplete={props.autoComplete}
            list={props.list}
          />
        ) : (
          <textarea {...shared} rows={props.rows} />
        );
      }}
    </Field>
  );
}

/** A labelled search of a list, with a hint of what it searches: it searches as it is typed. */
export function SearchField(props: {
  label: string;
  hint: ComponentChildren;
  value: string;
  onInput: (value: string) => void;
}) {
  return <TextField type="search" {...props} />;
}

/** A labelled choice of one of `options` (value and words), as the lists' filters offer. */
export function SelectField(props: {
  label: string;
  value: string;
  options: readonly (readonly [value: string, label: string])[];
  onChange: (value: string) => void;
}) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          {props.options.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
