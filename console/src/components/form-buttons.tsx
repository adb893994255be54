import { useRef } from 'preact/hooks';
import { useEscapeCancels } from './escape-cancels.ts';

/** A form's `Save` (or another name) and `Cancel` (Escape too); Save waits while the request is under way. */
export function FormButtons(props: { busy: boolean; onCancel: () => void; submitLabel?: string }) {
  const actions = useRef<HTMLDivElement>(null);
  useEscapeCancels(actions, props.onCancel);
  return (
    <div class="actions" ref={actions}>
      <button type="submit" disabled={props.busy}>
        {props.submitLabel ?? 'Save'}
      </button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  );
}
