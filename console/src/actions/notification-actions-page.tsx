import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows, useMayRead } from '../caller.ts';
import { EditDelete } from '../components/edit-delete.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { useLoad } from '../components/use-load.ts';
import { currentQuery, keepQuery, Link } from '../router.tsx';
import { ActionDeliveries } from './action-deliveries.tsx';
import { ActionForm } from './action-form.tsx';
import { type Action, type ActionType, destination, KINDS, nameAction } from './kinds.ts';

/**
 * Notification actions belong to a rule, and the API lists them rule by rule: the page shows the
 * actions of the rule chosen in `Rule` (kept in the query string), each with its delivery attempts.
 */
export function NotificationActionsPage() {
  // The rules are read once the role is known, and only by a role that may read them (docs/console.md, "Pages").
  const mayReadRules = useMayRead('rule');
  const rules = useLoad(
    async () =>
      mayReadRules
        ? answer(api.GET('/api/v3/rules', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } }))
        : undefined,
    [mayReadRules],
  );
  const [chosen, setChosen] = useState(() => currentQuery().get('rule') ?? '');
  const ruleKey = chosen || rules.data?.rules[0]?.rule_key || '';
  useEffect(() => keepQuery({ rule: chosen }), [chosen]);
  const actions = useLoad(
    async () =>
      ruleKey === ''
        ? undefined
        : answer(api.GET('/api/v3/notification_actions', { params: { query: { rule_key: ruleKey, per: 1000 } } })),
    [ruleKey],
  );
  const mayCreate = useAllows('notification_action', 'create');
  const mayUpdate = useAllows('notification_action', 'update');
  const mayDelete = useAllows('notification_action', 'delete');
  const [editing, setEditing] = useState<Action | 'new' | undefined>();
  const [shown, setShown] = useState<string | undefined>();
  const ruleList = rules.data?.rules ?? [];
  const newButton = mayCreate && editing === undefined && ruleKey !== '' && (
    <button type="button" onClick={() => setEditing('new')}>
      New action
    </button>
  );
  return (
    <section>
      <h1>Notification actions</h1>
      <Failure message={rules.error} />
      {mayReadRules === false && (
        <p class="muted">Actions are listed rule by rule, and your role may not read rules.</p>
      )}
      {rules.data?.rules.length === 0 && (
        <EmptyState title="No rules yet" action={<Link to="rules">Go to Rules</Link>}>
          A notification action is carried out when its rule fires: make a rule first.
        </EmptyState>
      )}
      {ruleList.length > 0 && (
        <div class="filters">
          <Field label="Rule">
            {(id) => (
              <select id={id} value={ruleKey} onChange={(e) => setChosen(e.currentTarget.value)}>
                {ruleList.map((rule) => (
                  <option key={rule.rule_key} value={rule.rule_key}>
                    {rule.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
      )}
      {actions.data?.total_count !== 0 && newButton}
      {editing !== undefined && (
        <ActionForm
          key={editing === 'new' ? 'new' : editing.notification_action_key}
          action={editing === 'new' ? undefined : editing}
          ruleKey={ruleKey}
          rules={ruleList}
          onDone={(saved) => {
            setEditing(undefined);
            if (saved) actions.reload();
          }}
        />
      )}
      <Failure message={actions.error} />
      {actions.data?.total_count === 0 && editing === undefined && (
        <EmptyState title="No actions for this rule" action={newButton || undefined}>
          An action sends an e-mail or an SMS, calls a URL or sets the thing's properties each time the rule fires.
        </EmptyState>
      )}
      {actions.data && actions.data.total_count > 0 && (
        <table aria-label="Notification actions" class="cards">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Goes to</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {actions.data.notification_actions.map((action) => {
              const kind = KINDS[action.type as ActionType]?.label ?? action.type;
              const name = nameAction(action);
              return (
                <Fragment key={action.notification_action_key}>
                  <tr>
                    <td>{kind}</td>
                    <td data-label="Goes to">
                      <code>{destination(action)}</code>
                      {action.subject && <div class="muted">{action.subject}</div>}
                    </td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={shown === action.notification_action_key}
                        aria-label={`Deliveries of ${name}`}
                        onClick={() =>
                          setShown(
                            shown === action.notification_action_key ? undefined : action.notification_action_key,
                          )
                        }
                      >
                        Deliveries
                      </button>
                      <EditDelete
                        name={name}
                        mayUpdate={mayUpdate}
                        mayDelete={mayDelete}
                        onEdit={() => setEditing(action)}
                        question={
                          <>
                            The action <strong>{name}</strong> is deleted; the rule no longer carries it out.
                          </>
                        }
                        onDelete={async () => {
                          await answer(
                            api.DELETE('/api/v3/notification_actions/{notification_action_key}', {
                              params: { path: { notification_action_key: action.notification_action_key } },
                            }),
                          );
                          actions.reload();
                        }}
                      />
                    </td>
                  </tr>
                  {shown === action.notification_action_key && (
                    <tr>
                      <td colSpan={3}>
                        <ActionDeliveries action={action} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
