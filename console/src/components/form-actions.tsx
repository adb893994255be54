import { Failure } from './failure.tsx';
import type { Action } from './use-action.ts';

/** A form's submit button (and `Cancel`), with the API's message about the submit next to them. */
export function FormActions(props: { action: Action; submit: string; onCancel?: () => void }) {
  return (
    <div class="form-actions">
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
