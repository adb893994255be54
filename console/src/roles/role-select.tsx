import type { ComponentChildren } from 'preact';
import { useCaller } from '../caller.ts';
import { mayGive } from './abilities.ts';
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
      <RoleOptions roles={props.roles} value={props.value} />
    </select>
  );
}

/**
 * The roles as a select's options, those granting more than the caller's own role may give greyed
 * out and saying so (the API would refuse them); the one chosen now stays as it is.
 */
export function RoleOptions({ roles, value }: { roles: Role[]; value: string }) {
  const caller = useCaller();
  return (
    <>
      {roles.map((r) => {
        const beyond = r.role_key !== value && !mayGive(caller, r);
        return (
          <option key={r.role_key} value={r.role_key} disabled={beyond}>
            {beyond ? `${r.name} (more than your role may give)` : r.name}
          </option>
        );
      })}
    </>
  );
}
