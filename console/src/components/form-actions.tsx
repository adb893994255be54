import { useRef } from 'preact/hooks';
import { useEscapeCancels } from './escape-cancels.ts';
import { Failure } from './failure.tsx';
import type { Action } from './use-action.ts';

/** A form's submit button (and `Cancel`, Escape too), with the API's message about the submit next to them. */
export function FormActions(props: { action: Action; submit: string; onCancel?: () => void }) {
  const actions = useRef<HTMLDivElement>(null);
  useEscapeCancels(actions, props.onCancel);
  return (
    <div class="form-actions" ref={actions}>
      <div class="actions">
        <button type="submit" disabled={props.action.busy}>
          {props.submit}
        </button>
        {props.onCancel && (
          <button type="button" class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
      <Failure message={props.action.error} />
    </div>
  );
}
