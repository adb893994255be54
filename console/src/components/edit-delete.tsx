import type { ComponentChildren } from 'preact';
import { ConfirmButton } from './confirm.tsx';
import { RowButton } from './row-button.tsx';

/**
 * A list row's `Edit` and `Delete`, each described by the row's name (`Boilers`), each offered only when the
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
      {props.mayUpdate && <RowButton label="Edit" about={props.name} onClick={props.onEdit} />}
      {props.mayDelete && (
        <ConfirmButton
          label="Delete"
          about={props.name}
          title={`Delete ${props.name}?`}
          question={props.question}
          onConfirm={props.onDelete}
        />
      )}
    </>
  );
}
