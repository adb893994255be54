import { useId, useState } from 'preact/hooks';
import { ActionDeliveries } from '../actions/action-deliveries.tsx';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { mayRead, useAllows, useCaller } from '../caller.ts';
import { EditDelete } from '../components/edit-delete.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { useExpressionCheck } from '../components/expression-check.ts';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { answerByField, byField } from '../components/field-errors.ts';
import { GroupSelect, loadGroups } from '../components/group-select.tsx';
import { RowButton } from '../components/row-button.tsx';
import { loadTemplates, TemplateSelect } from '../components/template-select.tsx';
import { type ThingChoice, ThingCombobox } from '../components/thing-combobox.tsx';
import { useLoad } from '../components/use-load.ts';
import { showDuration } from '../format.ts';
import { validConditionHint } from './condition-hint.ts';

type Rule = paths['/api/v3/rules']['get']['responses'][200]['content']['application/json']['rules'][number];
type Trigger = 'on_enter' | 'every_event' | 'no_data';
const ALERT_TYPES = ['Info', 'Warning', 'Error', 'Critical'];
/** The fields whose refusal the API names (`rule.condition`), each said under its field. */
const FIELDS = ['rule.name', 'rule.condition', 'rule.description', 'rule.for_seconds', 'rule.alert_message'];
type Refusal = ReturnType<typeof byField>;
/** The rule's triggers in words (docs/rules.md, "Rule timing"). */
const TRIGGERS: [Trigger, string][] = [
  ['on_enter', 'When the condition turns true'],
  ['every_event', 'On every event that meets the condition'],
  ['no_data', 'When a thing sends nothing'],
];

/**
 * When a rule fires beside its condition, in the list (docs/rules.md, "Rule timing"): a silence, a
 * condition that must hold a while, every event; nothing for the usual "when it turns true at once".
 */
function timingOf(rule: { trigger: string; for_seconds: number }): string | undefined {
  if (rule.trigger === 'no_data') return `Nothing sent for ${showDuration(rule.for_seconds)}`;
  if (rule.trigger === 'every_event') return 'On every event that meets the condition';
  return rule.for_seconds > 0 ? `Held for ${showDuration(rule.for_seconds)}` : undefined;
}

/** Rules, a form to create or edit one, and each rule's notification actions with their deliveries. */
export function RulesPage() {
  const list = useLoad(
    () => answer(api.GET('/api/v3/rules', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } })),
    [],
  );
  const [editing, setEditing] = useState<Rule | 'new' | undefined>();
  const [shown, setShown] = useState<string | undefined>();
  const mayCreate = useAllows('rule', 'create');
  const mayUpdate = useAllows('rule', 'update');
  const mayDelete = useAllows('rule', 'delete');
  // A rule's notification actions, and their deliveries, are offered to a role that may read them.
  const mayReadActions = useAllows('notification_action', 'read');
  const withActions = mayUpdate || mayDelete || mayReadActions;
  const newRule = mayCreate && editing === undefined && (
    <button type="button" onClick={() => setEditing('new')}>
      New rule
    </button>
  );
  const none = list.data?.rules.length === 0;
  return (
    <section>
      <h1>Rules</h1>
      {!none && newRule}
      {none && editing === undefined && (
        <EmptyState title="No rules yet" action={newRule || undefined}>
          A rule watches the events of things and, when its condition holds (temperature &gt; 90, say), raises an alert
          and notifies people through its notification actions.
        </EmptyState>
      )}
      {editing !== undefined && (
        <RuleForm
          // A new form for each rule: its fields start from that rule's values.
          key={editing === 'new' ? 'new' : editing.rule_key}
          rule={editing === 'new' ? undefined : editing}
          onDone={(saved) => {
            setEditing(undefined);
            if (saved) list.reload();
          }}
        />
      )}
      <Failure message={list.error} />
      {list.data && !none && (
        <table aria-label="Rules" class="cards">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Condition</th>
              <th scope="col">Alert</th>
              <th scope="col">Enabled</th>
              {withActions && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {list.data.rules.map((rule) => (
              <>
                <tr key={rule.rule_key}>
                  <td>{rule.name}</td>
                  <td data-label="Condition">
                    {rule.condition && <code>{rule.condition}</code>}
                    {timingOf(rule) && <small class="rule-timing">{timingOf(rule)}</small>}
                  </td>
                  <td data-label="Alert">
                    {rule.alert_type === null
                      ? ''
                      : [ALERT_TYPES[rule.alert_type], rule.alert_message].filter(Boolean).join(': ')}
                  </td>
                  <td data-label="Enabled">{rule.enabled ? 'Yes' : 'No'}</td>
                  {withActions && (
                    <td class="row-actions">
                      {mayReadActions && (
                        <button
                          type="button"
                          class="secondary"
                          aria-expanded={shown === rule.rule_key}
                          aria-label={`Notifications of ${rule.name}`}
                          onClick={() => setShown(shown === rule.rule_key ? undefined : rule.rule_key)}
                        >
                          Notifications
                        </button>
                      )}
                      <EditDelete
                        name={rule.name}
                        mayUpdate={mayUpdate}
                        mayDelete={mayDelete}
                        onEdit={() => setEditing(rule)}
                        question={
                          <p>Its notification actions go with it. Its alerts stay, and so does the audit trail.</p>
                        }
                        onDelete={async () => {
                          await answer(
                            api.DELETE('/api/v3/rules/{rule_key}', { params: { path: { rule_key: rule.rule_key } } }),
                          );
                          if (editing !== 'new' && editing?.rule_key === rule.rule_key) setEditing(undefined);
                          list.reload();
                        }}
                      />
                    </td>
                  )}
                </tr>
                {shown === rule.rule_key && (
                  <tr key={`${rule.rule_key}-actions`}>
                    <td colSpan={5}>
                      <RuleActions rule={rule} />
                    </td>
                  </tr>
                )}
              </>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function RuleForm({ rule, onDone }: { rule: Rule | undefined; onDone: (saved: boolean) => void }) {
  const [name, setName] = useState(rule?.name ?? '');
  const [condition, setCondition] = useState(rule?.condition ?? '');
  // '' is None: the rule raises no alert (alert_type null); a new rule starts at Warning.
  const [alertType, setAlertType] = useState(rule ? (rule.alert_type === null ? '' : String(rule.alert_type)) : '1');
  const [alertMessage, setAlertMessage] = useState(rule?.alert_message ?? '');
  const [template, setTemplate] = useState(rule?.thing_template_key ?? '');
  const [description, setDescription] = useState(rule?.description ?? '');
  const [trigger, setTrigger] = useState<Trigger>((rule?.trigger as Trigger | undefined) ?? 'on_enter');
  const [forSeconds, setForSeconds] = useState(String(rule?.for_seconds ?? 0));
  const [autoClear, setAutoClear] = useState(rule?.auto_clear ?? false);
  const [enabled, setEnabled] = useState(rule?.enabled ?? true);
  const [group, setGroup] = useState(rule?.group_key ?? '');
  // The things a rule names are kept by key; those added here show their names too.
  const [things, setThings] = useState<ThingChoice[]>(
    (rule?.thing_keys ?? []).map((thing_key) => ({ thing_key, name: '' })),
  );
  const [refusal, setRefusal] = useState<Refusal>({ fields: {} });
  const check = useExpressionCheck(condition, 'rule');
  // The condition is said once, under its field: the check as it is typed, else what Save was told.
  const conditionError = check.message ?? refusal.fields['rule.condition'];
  // A no_data rule's condition is optional (docs/rules.md); once given, the API cannot remove it.
  const conditionOptional = rule?.trigger === 'no_data' && rule.condition === '';
  // Templates, groups and things are offered to choose from as the role may read them, and only those
  // lists are asked for once the role is known; what the rule already watches is kept (docs/console.md, "Pages").
  const caller = useCaller();
  const readable = { templates: mayRead(caller, 'thing_template'), groups: mayRead(caller, 'group') };
  const unreadable = (cls: string) => mayRead(caller, cls) === false;
  const templates = useLoad(async () => (readable.templates ? loadTemplates() : undefined), [readable.templates]);
  const groups = useLoad(async () => (readable.groups ? loadGroups() : undefined), [readable.groups]);
  const autoClearHint = useId();
  const save = async (event: Event) => {
    event.preventDefault();
    // Every field the form shows is sent, empty ones too: an update keeps what it is not given, so a
    // template set to None (null) or an emptied message must be sent to be removed.
    const fields = {
      name,
      description,
      ...(condition ? { condition } : {}),
      alert_type: alertType === '' ? null : (Number(alertType) as 0 | 1 | 2 | 3),
      alert_message: alertMessage,
      thing_template_key: template || null,
      group_key: group || null,
      thing_keys: things.map((t) => t.thing_key),
      trigger,
      // Every event fires at once: the API takes no wait for it.
      for_seconds: trigger === 'every_event' ? 0 : Number(forSeconds),
      auto_clear: autoClear && alertType !== '',
      enabled,
    };
    setRefusal({ fields: {} });
    try {
      if (rule) {
        await answerByField(
          api.PUT('/api/v3/rules/{rule_key}', {
            params: { path: { rule_key: rule.rule_key } },
            body: { rule: fields },
          }),
        );
      } else {
        await answerByField(api.POST('/api/v3/rules', { body: { rule: fields } }));
      }
      onDone(true);
    } catch (failure) {
      setRefusal(byField(failure, FIELDS));
    }
  };
  return (
    <form onSubmit={save} class="panel" aria-label={rule ? `Edit ${rule.name}` : 'New rule'}>
      <h2>{rule ? `Edit ${rule.name}` : 'New rule'}</h2>
      <Field label="Name" error={refusal.fields['rule.name']}>
        {(id, describedBy, invalid) => (
          <input
            id={id}
            required
            aria-describedby={describedBy}
            aria-invalid={invalid}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        label="Condition"
        hint={
          check.valid
            ? validConditionHint(
                check.metrics,
                templates.data?.find((t) => t.thing_template_key === template),
              )
            : conditionOptional
              ? "Optional for a no_data rule: when given, it is checked against the thing's last event"
              : "Metrics and thing.<field>, e.g. temperature > 80 and thing.name == 'boiler'"
        }
        error={conditionError}
      >
        {(id, describedBy) => (
          <input
            id={id}
            required={!conditionOptional}
            aria-describedby={describedBy}
            aria-invalid={conditionError ? true : undefined}
            value={condition}
            onInput={(e) => {
              setCondition(e.currentTarget.value);
              // What Save was told is about the condition sent, not this one.
              setRefusal(({ fields: { 'rule.condition': _sent, ...others }, ...r }) => ({ ...r, fields: others }));
            }}
          />
        )}
      </Field>
      <Field label="Description" error={refusal.fields['rule.description']}>
        {(id, describedBy, invalid) => (
          <input
            id={id}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        )}
      </Field>
      <fieldset class="stack">
        <legend>Things watched</legend>
        <p class="hint">
          The things of the template, the group's members and the things listed; every thing when none.
        </p>
        {unreadable('thing_template') ? (
          <p class="muted">
            Your role may not read templates{rule?.thing_template_key ? ': the rule keeps its own.' : ' to choose one.'}
          </p>
        ) : (
          <TemplateSelect templates={templates.data} value={template} onChange={setTemplate} none="None" />
        )}
        {unreadable('group') ? (
          <p class="muted">
            Your role may not read groups{rule?.group_key ? ': the rule keeps its own.' : ' to choose one.'}
          </p>
        ) : (
          <GroupSelect groups={groups.data} value={group} onChange={setGroup} none="None" />
        )}
        {unreadable('thing') ? (
          <p class="muted">Your role may not read things to add one.</p>
        ) : (
          <ThingCombobox
            label="Add thing"
            exclude={new Set(things.map((t) => t.thing_key))}
            onChoose={(thing) => setThings((list) => [...list, thing])}
          />
        )}
        {things.length > 0 && (
          <ul class="members" aria-label="Things listed">
            {things.map((thing) => (
              <li key={thing.thing_key}>
                {thing.name} <code>{thing.thing_key}</code>{' '}
                <RowButton
                  label="Remove"
                  about={thing.name || thing.thing_key}
                  onClick={() => setThings((list) => list.filter((t) => t.thing_key !== thing.thing_key))}
                />
              </li>
            ))}
          </ul>
        )}
      </fieldset>
      <Field label="Trigger">
        {(id) => (
          <select id={id} value={trigger} onChange={(e) => setTrigger(e.currentTarget.value as Trigger)}>
            {TRIGGERS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {trigger !== 'every_event' && (
        <Field
          label="For (seconds)"
          error={refusal.fields['rule.for_seconds']}
          hint={
            trigger === 'no_data'
              ? 'How long a thing must send nothing (at least 1)'
              : 'How long, by event time, the condition must hold before the rule fires (0: at once)'
          }
        >
          {(id, describedBy, invalid) => (
            <input
              id={id}
              type="number"
              min={trigger === 'no_data' ? 1 : 0}
              max={2_592_000}
              required
              aria-describedby={describedBy}
              aria-invalid={invalid}
              value={forSeconds}
              onInput={(e) => setForSeconds(e.currentTarget.value)}
            />
          )}
        </Field>
      )}
      <Field label="Alert type" hint="None raises no alert; the notification actions still run">
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={alertType}
            onChange={(e) => setAlertType(e.currentTarget.value)}
          >
            <option value="">None</option>
            {ALERT_TYPES.map((label, i) => (
              <option key={label} value={String(i)}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="Alert message"
        hint={
          <>
            Placeholders are filled in: a metric of the event, <code>{'{{temperature}}'}</code> (nested:{' '}
            <code>{'{{machine.temp}}'}</code>), and the thing's fields, <code>{'{{thing.name}}'}</code>,{' '}
            <code>{'{{thing.thing_key}}'}</code> or any <code>{'{{thing.<field>}}'}</code>; an unknown one is left
            empty. Empty: the rule's name, condition and thing.
          </>
        }
        error={refusal.fields['rule.alert_message']}
      >
        {(id, describedBy, invalid) => (
          <input
            id={id}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            value={alertMessage}
            onInput={(e) => setAlertMessage(e.currentTarget.value)}
          />
        )}
      </Field>
      <label class="check">
        <input
          type="checkbox"
          checked={autoClear && alertType !== ''}
          disabled={alertType === ''}
          aria-describedby={autoClearHint}
          onChange={(e) => setAutoClear(e.currentTarget.checked)}
        />{' '}
        Clear automatically
      </label>
      <small id={autoClearHint} class="hint">
        One open alert per thing, cleared at the first event on which the condition no longer holds; needs an alert
        type.
      </small>
      <label class="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Enabled
      </label>
      <Failure message={refusal.rest} />
      <div>
        <button type="submit">Save</button>{' '}
        <button type="button" class="secondary" onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function RuleActions({ rule }: { rule: Rule }) {
  const actions = useLoad(
    () => answer(api.GET('/api/v3/notification_actions', { params: { query: { rule_key: rule.rule_key, per: 100 } } })),
    [rule.rule_key],
  );
  return (
    <div>
      <Failure message={actions.error} />
      {actions.data?.notification_actions.length === 0 && <p>No notification actions.</p>}
      {actions.data?.notification_actions.map((action) => (
        <ActionDeliveries key={action.notification_action_key} action={action} />
      ))}
    </div>
  );
}
