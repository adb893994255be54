import type { ComponentChildren } from 'preact';
import type { Role } from './use-roles.ts';

/** A list of the organisation's roles by name; `first` adds a choice before them (`My own role`). */
export function RoleSelect(props: {
  id?: string;
  label?: string;
  describedBy?: string | undefined;
  /** Whether there is a message about the choice (its Field's `invalid`). */
  invalid?: true | undefined;
  roles: Role[];
  value: string;
  disabled?: boolean;
  onChange: (roleKey: string, select: HTMLSelectElement) => void;
  first?: ComponentChildren;
}) {
  return (
    <select
      id={props.id}
      aria-label={props.label}
      aria-describedby={props.describedBy}
      aria-invalid={props.invalid}
      value={props.value}
      disabled={props.disabled}
      onChange={(e) => props.onChange(e.currentTarget.value, e.currentTarget)}
    >
      {props.first}
      {props.roles.map((r) => (
        <option key={r.role_key} value={r.role_key}>
          {r.name}
        </option>
      ))}
    </select>
  );
}
