import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

/**
 * A labelled control: the label names it exactly (its text only), and a hint or the API's message
 * about it is tied to it as its description.
 */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  error?: string | undefined;
  children: (id: string, describedBy: string | undefined) => ComponentChildren;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const describedBy = props.hint || props.error ? hintId : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, describedBy)}
      {(props.hint || props.error) && (
        <small id={hintId} class={props.error ? 'error' : undefined} role={props.error ? 'alert' : undefined}>
          {props.error ?? props.hint}
        </small>
      )}
    </div>
  );
}
