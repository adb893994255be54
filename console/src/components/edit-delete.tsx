import type { ComponentChildren } from 'preact';
import { ConfirmButton } from './confirm.tsx';

/**
 * A list row's `Edit` and `Delete`, each named for the row (`Edit Boilers`), each offered only when the
 * role allows it; Delete asks first, naming what goes (`question`).
 */
export function EditDelete(props: {
  name: string;
  mayUpdate: boolean;
  mayDelete: boolean;
  onEdit: () => void;
  question: ComponentChildren;
  onDelete: () => Promise<unknown>;
}) {
  return (
    <>
      {props.mayUpdate && (
        <button type="button" class="secondary" aria-label={`Edit ${props.name}`} onClick={props.onEdit}>
          Edit
        </button>
      )}
      {props.mayDelete && (
        <ConfirmButton
          label="Delete"
          accessibleName={`Delete ${props.name}`}
          title={`Delete ${props.name}?`}
          question={props.question}
          onConfirm={props.onDelete}
        />
      )}
    </>
  );
}
