import { countOf } from '../format.ts';

/**
 * Previous and next page of a list, with where the user is in it. `noun` is the plural (`users`), whose
 * singular is it without the final s (every list's noun so far: `1 user`, `1 change`).
 */
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
        Page {props.page} of {pages} · {countOf(props.total, props.noun.replace(/s$/, ''), props.noun)}
      </span>
      <button type="button" disabled={props.page >= pages} onClick={() => props.onPage(props.page + 1)}>
        Next
      </button>
    </nav>
  );
}
