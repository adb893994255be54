import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { answerByField, fieldRefusal, useFieldSubmit } from '../components/field-errors.ts';
import { FormButtons } from '../components/form-buttons.tsx';
import { type Action, type ActionInput, type ActionType, type FieldName, KINDS } from './kinds.ts';

/** The API's field names in words. */
const LABELS: Record<FieldName, string> = {
  to: 'To',
  cc: 'Cc',
  bcc: 'Bcc',
  subject: 'Subject',
  url: 'URL',
  method: 'Method',
  headers: 'Headers',
  query: 'Query',
  body: 'Body',
  name: 'Name',
  phone_number: 'Phone number',
};

const HINTS: Partial<Record<FieldName, string>> = {
  to: 'e-mail addresses, comma-separated',
  url: 'http or https; $THING$ is replaced by the thing key',
  headers: 'a JSON object of text values, such as {"Authorization": "Bearer ..."}',
  query: 'a JSON object of text values',
};

/** What a body is for each kind that has one (docs/rules.md, "What each action does when its rule fires"). */
const BODY_HINTS: Partial<Record<ActionType, string>> = {
  CallHttpUrlAction:
    'sent as written, with $THING$ replaced by the thing key (no other placeholders); empty: JSON of the rule, thing, event and alert; never sent with GET',
  ThingUserDefinedPropertiesAction: 'JSON: {"user_defined_properties": {"mode": "eco"}}',
  SMSNotificationAction:
    'the message, with placeholders as in an alert message ({{temperature}}, {{thing.name}}); empty: the alert message',
};

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The API's name of a field (`notification_action.url`), by which its refusal is said under it. */
const P = (field: string) => `notification_action.${field}`;

/** Whether a field is sent as a JSON object for this kind (the property-setting kind's body too). */
const isObject = (type: ActionType, field: FieldName): boolean =>
  field === 'headers' || field === 'query' || (field === 'body' && type === 'ThingUserDefinedPropertiesAction');

/** A field's text in the form: objects as JSON, a property-setting body as the API answers it. */
function textOf(action: Action | undefined, field: FieldName): string {
  const value = action?.[field];
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

const BLANK: Record<FieldName, string> = {
  to: '',
  cc: '',
  bcc: '',
  subject: '',
  url: '',
  method: 'POST',
  headers: '{}',
  query: '{}',
  body: '',
  name: '',
  phone_number: '',
};

/** The fields of `type` as the API takes them; a JSON field that does not parse is refused here, under it. */
function fieldsOf(type: ActionType, texts: Record<FieldName, string>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const field of KINDS[type].fields) {
    const text = texts[field];
    if (isObject(type, field)) {
      try {
        fields[field] = JSON.parse(text || '{}');
      } catch {
        throw fieldRefusal(P(field), 'must be a JSON object, such as {"name": "value"}');
      }
    } else if (text !== '' || field === 'body') fields[field] = text;
  }
  return fields;
}

/** A notification action of one of the rules, created with `New action` or changed with `Edit`. */
export function ActionForm(props: {
  action: Action | undefined;
  ruleKey: string;
  rules: { rule_key: string; name: string }[];
  onDone: (saved: boolean) => void;
}) {
  const { action } = props;
  const [type, setType] = useState<ActionType>((action?.type as ActionType) ?? 'EmailNotificationAction');
  const [ruleKey, setRuleKey] = useState(action?.rule_key ?? props.ruleKey);
  const [texts, setTexts] = useState<Record<FieldName, string>>(() => {
    if (!action) return BLANK;
    const filled = { ...BLANK };
    for (const field of Object.keys(BLANK) as FieldName[])
      if (action[field] !== undefined) filled[field] = textOf(action, field);
    return filled;
  });
  const submit = useFieldSubmit([P('rule_key'), P('type'), ...KINDS[type].fields.map(P)], async () => {
    const body = { notification_action: { type, rule_key: ruleKey, ...fieldsOf(type, texts) } as ActionInput };
    if (action) {
      await answerByField(
        api.PUT('/api/v3/notification_actions/{notification_action_key}', {
          params: { path: { notification_action_key: action.notification_action_key } },
          body,
        }),
      );
    } else {
      await answerByField(api.POST('/api/v3/notification_actions', { body }));
    }
    props.onDone(true);
  });
  const title = action ? `Edit ${KINDS[type].label} action` : 'New action';
  const set = (field: FieldName, value: string) => setTexts((old) => ({ ...old, [field]: value }));
  return (
    <form onSubmit={submit.onSubmit} class="panel" aria-label={title}>
      <h2>{title}</h2>
      <Field label="Rule" hint="the rule whose firing carries the action out" error={submit.of(P('rule_key'))}>
        {(id, describedBy, invalid) => (
          <select
            id={id}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            value={ruleKey}
            onChange={(e) => setRuleKey(e.currentTarget.value)}
          >
            {props.rules.map((rule) => (
              <option key={rule.rule_key} value={rule.rule_key}>
                {rule.name}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Type" hint={action ? 'an action keeps its type' : undefined} error={submit.of(P('type'))}>
        {(id, describedBy, invalid) => (
          <select
            id={id}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            disabled={action !== undefined}
            value={type}
            onChange={(e) => setType(e.currentTarget.value as ActionType)}
          >
            {(Object.keys(KINDS) as ActionType[]).map((kind) => (
              <option key={kind} value={kind}>
                {KINDS[kind].label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {KINDS[type].fields.map((field) => (
        <Field
          key={`${type}-${field}`}
          label={LABELS[field]}
          hint={field === 'body' ? BODY_HINTS[type] : HINTS[field]}
          error={submit.of(P(field))}
        >
          {(id, describedBy, invalid) =>
            field === 'method' ? (
              <select
                id={id}
                aria-describedby={describedBy}
                aria-invalid={invalid}
                value={texts.method}
                onChange={(e) => set('method', e.currentTarget.value)}
              >
                {METHODS.map((method) => (
                  <option key={method}>{method}</option>
                ))}
              </select>
            ) : field === 'body' || isObject(type, field) ? (
              <textarea
                id={id}
                rows={3}
                aria-describedby={describedBy}
                aria-invalid={invalid}
                value={texts[field]}
                onInput={(e) => set(field, e.currentTarget.value)}
              />
            ) : (
              <input
                id={id}
                aria-describedby={describedBy}
                aria-invalid={invalid}
                value={texts[field]}
                onInput={(e) => set(field, e.currentTarget.value)}
              />
            )
          }
        </Field>
      ))}
      <Failure message={submit.error} />
      <FormButtons busy={submit.busy} onCancel={() => props.onDone(false)} />
    </form>
  );
}
