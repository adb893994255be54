/**
 * Choosing a group: the organisation's groups by name (the first 1,000, as a select can offer them) and
 * the labelled select the rule form uses; the things list and the dashboard editor read the same list.
 */
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { Field } from './field.tsx';

export type Group = paths['/api/v3/groups']['get']['responses'][200]['content']['application/json']['groups'][number];

export async function loadGroups(): Promise<Group[]> {
  return (await answer(api.GET('/api/v3/groups', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } })))
    .groups;
}

export function GroupSelect(props: {
  groups: Group[] | undefined;
  value: string;
  onChange: (groupKey: string) => void;
  /** The label of a first choice meaning no group (its value is ''). */
  none: string;
}) {
  return (
    <Field label="Group">
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">{props.none}</option>
          {props.groups?.map((g) => (
            <option key={g.group_key} value={g.group_key}>
              {g.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
