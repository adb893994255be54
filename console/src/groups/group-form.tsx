import { useEffect, useId, useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import { useExpressionCheck } from '../components/expression-check.ts';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldSubmit } from '../components/field-errors.ts';
import { FormButtons } from '../components/form-buttons.tsx';
import type { Group } from '../components/group-select.tsx';
import { Pager } from '../components/pager.tsx';
import { RowButton } from '../components/row-button.tsx';
import { type ThingChoice, ThingCombobox } from '../components/thing-combobox.tsx';
import { loadMembers } from './group-members.tsx';

export type { Group };

const STATIC = 1;
const DYNAMIC = 2;
type GroupType = typeof STATIC | typeof DYNAMIC;
/** Members shown at a time in the form; the group may hold 10,000. */
const SHOWN = 20;
/** The most a static group holds (docs/api.md, "Groups"), read in pages of the API's largest. */
const MAX_MEMBERS = 10_000;
const PAGE = 1000;
/** The fields whose refusal the API names (`group.name`), each said under its field. */
const FIELDS = ['group.name', 'group.description', 'group.thing_expression'];

/** Every member of a static group, for the form that sends the whole list back. */
async function loadAllMembers(groupKey: string): Promise<ThingChoice[]> {
  const first = await loadMembers(groupKey, 1, PAGE);
  const pages = Math.ceil(Math.min(first.total_count, MAX_MEMBERS) / PAGE);
  const rest = await Promise.all(Array.from({ length: pages - 1 }, (_, i) => loadMembers(groupKey, i + 2, PAGE)));
  return [first, ...rest].flatMap((p) => p.things.map((t) => ({ thing_key: t.thing_key, name: t.name })));
}

/**
 * A group's name and membership: static (things chosen with `Add thing`, each with `Remove`) or by
 * expression (checked as it is typed, docs/expressions.md). Save sends the whole member list.
 */
export function GroupForm({ group, onDone }: { group: Group | undefined; onDone: (saved: boolean) => void }) {
  const [name, setName] = useState(group?.name ?? '');
  const [description, setDescription] = useState(group?.description ?? '');
  const [type, setType] = useState<GroupType>(group?.group_type === DYNAMIC ? DYNAMIC : STATIC);
  const [expression, setExpression] = useState(group?.thing_expression ?? '');
  const [members, setMembers] = useState<ThingChoice[] | undefined>(group?.group_type === STATIC ? undefined : []);
  const [membersError, setMembersError] = useState<string | undefined>();
  const [page, setPage] = useState(1);
  const check = useExpressionCheck(type === DYNAMIC ? expression : '', 'group');
  useEffect(() => {
    if (!group || group.group_type !== STATIC) return;
    loadAllMembers(group.group_key).then(setMembers, (failure) => {
      setMembers([]);
      setMembersError(String(failure.message ?? failure));
    });
  }, [group?.group_key]);
  const memberKeys = new Set(members?.map((m) => m.thing_key));
  const submit = useFieldSubmit(FIELDS, async () => {
    const membership =
      type === STATIC ? { thing_keys: members?.map((m) => m.thing_key) ?? [] } : { thing_expression: expression };
    const fields = { name, description, group_type: type, ...membership };
    if (group) {
      await answerByField(
        api.PUT('/api/v3/groups/{group_key}', {
          params: { path: { group_key: group.group_key } },
          body: { group: fields },
        }),
      );
    } else {
      await answerByField(api.POST('/api/v3/groups', { body: { group: fields } }));
    }
    onDone(true);
  });
  // The expression is said once, under its field: the check as it is typed, else what Save was told.
  const expressionError = check.message ?? submit.of('group.thing_expression');
  const formId = useId();
  const title = group ? `Edit ${group.name}` : 'New group';
  const shown = members?.slice((page - 1) * SHOWN, page * SHOWN) ?? [];
  return (
    <form onSubmit={submit.onSubmit} class="panel" aria-label={title}>
      <h2>{title}</h2>
      <TextField label="Name" required value={name} onInput={setName} error={submit.of('group.name')} />
      <TextField
        label="Description"
        value={description}
        onInput={setDescription}
        error={submit.of('group.description')}
      />
      <div class="radios" role="radiogroup" aria-labelledby={`${formId}-type`}>
        <span id={`${formId}-type`}>Group type</span>
        <label>
          <input type="radio" name="group-type" checked={type === STATIC} onChange={() => setType(STATIC)} /> Static
        </label>{' '}
        <label>
          <input type="radio" name="group-type" checked={type === DYNAMIC} onChange={() => setType(DYNAMIC)} /> By
          expression
        </label>
      </div>
      {type === DYNAMIC && (
        <TextField
          label="Expression"
          hint={
            check.valid ? 'The expression is valid.' : "Thing fields, e.g. tags contains 'hall-a' or name == 'Boiler 1'"
          }
          required
          value={expression}
          onInput={setExpression}
          error={expressionError}
        />
      )}
      {type === STATIC && (
        <section aria-label="Members">
          <ThingCombobox
            label="Add thing"
            exclude={memberKeys}
            onChoose={(thing) => setMembers((list) => [...(list ?? []), thing])}
          />
          <Failure message={membersError} />
          {members === undefined && <p>Loading the members…</p>}
          {members?.length === 0 && <p>No things yet: add them above.</p>}
          {shown.length > 0 && (
            <ul class="members">
              {shown.map((thing) => (
                <li key={thing.thing_key}>
                  {thing.name} <code>{thing.thing_key}</code>{' '}
                  <RowButton
                    label="Remove"
                    about={thing.name}
                    onClick={() => setMembers((list) => list?.filter((m) => m.thing_key !== thing.thing_key))}
                  />
                </li>
              ))}
            </ul>
          )}
          {members && members.length > SHOWN && (
            <Pager page={page} per={SHOWN} total={members.length} noun="members" onPage={setPage} />
          )}
        </section>
      )}
      <Failure message={submit.error} />
      <FormButtons busy={submit.busy || members === undefined} onCancel={() => onDone(false)} />
    </form>
  );
}
