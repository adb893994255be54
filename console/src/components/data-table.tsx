import type { ComponentChildren } from 'preact';

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
}

/**
 * A table of rows (text cells: nothing from the API is inserted as HTML), one column per `Column`; with
 * no rows, one row saying so (`empty`), rather than headers over nothing. On a phone each row is a card,
 * each cell headed by its column's name (style.css, `table.cards`), but for a row's buttons (`Actions`).
 */
export function DataTable<T>(props: {
  label: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty?: ComponentChildren;
}) {
  return (
    <table aria-label={props.label} class="cards">
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th key={c.header} scope="col">
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.rows.length === 0 && <EmptyRow columns={props.columns.length}>{props.empty ?? 'None yet.'}</EmptyRow>}
        {props.rows.map((row) => (
          <tr key={props.rowKey(row)}>
            {props.columns.map((c) => (
              <td key={c.header} data-label={c.header === 'Actions' ? undefined : c.header}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The one row of a table with none to show, across its `columns`, saying so. */
export function EmptyRow(props: { columns: number; children: ComponentChildren }) {
  return (
    <tr>
      <td colSpan={props.columns} class="muted">
        {props.children}
      </td>
    </tr>
  );
}
