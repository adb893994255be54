import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { messageOf } from '../api/client.ts';
import { Failure } from './failure.tsx';

/**
 * A destructive action behind a confirmation: the button opens a modal dialog that names what will be
 * deleted (`question`), with the action's own button (`confirmLabel`, `Delete` by default) and `Cancel`.
 * The API's message stays in the dialog when the action is refused; the dialog closes once it is done.
 */
export function ConfirmButton(props: {
  label: string;
  /** What the button acts on, when several on a page share a label (`boiler-1`): its description. */
  about?: string;
  title: string;
  question: ComponentChildren;
  confirmLabel?: string;
  onConfirm: () => Promise<unknown>;
  class?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await props.onConfirm();
      setOpen(false);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class={props.class ?? 'danger'}
        aria-description={props.about}
        onClick={() => {
          setError(undefined);
          setOpen(true);
        }}
      >
        {props.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId} onClose={() => setOpen(false)}>
        {open && (
          <>
            <h2 id={titleId}>{props.title}</h2>
            <p>{props.question}</p>
            <Failure message={error} />
            <div class="actions">
              <button type="button" class="danger" disabled={busy} onClick={confirm}>
                {props.confirmLabel ?? 'Delete'}
              </button>
              <button type="button" class="secondary" onClick={() => setOpen(false)}>
                Cancel
              </button>
            </div>
          </>
        )}
      </dialog>
    </>
  );
}
