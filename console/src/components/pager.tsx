/** Previous and next page of a list, with where the user is in it. */
export function Pager(props: {
  page: number;
  per: number;
  total: number;
  noun: string;
  onPage: (page: number) => void;
}) {
  const pages = Math.max(1, Math.ceil(props.total / props.per));
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        Previous
      </button>
      <span>
        Page {props.page} of {pages} · {props.total} {props.noun}
      </span>
      <button type="button" disabled={props.page >= pages} onClick={() => props.onPage(props.page + 1)}>
        Next
      </button>
    </nav>
  );
}
