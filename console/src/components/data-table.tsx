import type { ComponentChildren } from 'preact';

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
}

/** A table of rows (text cells: nothing from the API is inserted as HTML), one column per `Column`. */
export function DataTable<T>(props: { label: string; columns: Column<T>[]; rows: T[]; rowKey: (row: T) => string }) {
  return (
    <table aria-label={props.label}>
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
        {props.rows.map((row) => (
          <tr key={props.rowKey(row)}>
            {props.columns.map((c) => (
              <td key={c.header}>{c.cell(row)}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
