/**
 * Choosing a template: the organisation's templates by name (the first 1,000, as a select can offer
 * them) and the labelled select the thing, rule and dashboard forms share.
 */
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { Field } from './field.tsx';

export type Template =
  paths['/api/v3/thing_templates']['get']['responses'][200]['content']['application/json']['thing_templates'][number];

export async function loadTemplates(): Promise<Template[]> {
  return (
    await answer(
      api.GET('/api/v3/thing_templates', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } }),
    )
  ).thing_templates;
}

export function TemplateSelect(props: {
  templates: Template[] | undefined;
  value: string;
  onChange: (templateKey: string) => void;
  hint?: string;
  error?: string | undefined;
  required?: boolean;
  /** The label of a first choice meaning no template (its value is ''). */
  none?: string;
}) {
  return (
    <Field label="Template" hint={props.hint} error={props.error}>
      {(id, describedBy, invalid) => (
        <select
          id={id}
          aria-describedby={describedBy}
          aria-invalid={invalid}
          required={props.required}
          value={props.value}
          onChange={(e) => props.onChange(e.currentTarget.value)}
        >
          {props.none !== undefined && <option value="">{props.none}</option>}
          {props.templates?.map((t) => (
            <option key={t.thing_template_key} value={t.thing_template_key}>
              {t.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
