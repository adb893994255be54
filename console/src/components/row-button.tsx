/**
 * A row's button: it keeps its short name (`Edit`, `Remove`, the same on every row, as docs/console.md
 * names them) and is described by what it acts on (`about`, the row's name, as its `aria-description`),
 * so that a screen reader tells one row's button from the next.
 */
export function RowButton(props: { label: string; about: string; onClick: () => void }) {
  return (
    <button type="button" class="secondary" aria-description={props.about} onClick={props.onClick}>
      {props.label}
    </button>
  );
}
