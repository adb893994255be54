/** A form's `Save` (or another name) and `Cancel`; Save waits while the request is under way. */
export function FormButtons(props: { busy: boolean; onCancel: () => void; submitLabel?: string }) {
  return (
    <div class="actions">
      <button type="submit" disabled={props.busy}>
        {props.submitLabel ?? 'Save'}
      </button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  );
}
