/**
 * A dashboard's variables while it is edited (docs/console.md, "Dashboards"): each one a name that
 * widgets write as `$<name>` where a thing key goes, and the template whose things the viewer chooses
 * from. The API checks the names when the dashboard is saved and names the field it refuses.
 */
import { useState } from 'preact/hooks';
import { useMayRead } from '../caller.ts';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { loadTemplates, TemplateSelect } from '../components/template-select.tsx';
import { useLoad } from '../components/use-load.ts';
import type { Dashboard } from './model.ts';

type Variable = Dashboard['variables'][number];

export function VariablesEditor(props: { variables: Variable[]; onChange: (variables: Variable[]) => void }) {
  // A variable is of a template chosen from the list: offered, and the list asked for, as the role may read it.
  const templatesReadable = useMayRead('thing_template');
  const templates = useLoad(async () => (templatesReadable ? loadTemplates() : undefined), [templatesReadable]);
  const [name, setName] = useState('');
  const [template, setTemplate] = useState('');
  const chosenTemplate = template || templates.data?.[0]?.thing_template_key || '';
  const templateName = (key: string) => templates.data?.find((t) => t.thing_template_key === key)?.name ?? key;
  const add = (event: Event) => {
    event.preventDefault();
    props.onChange([...props.variables, { name: name.trim().replace(/^\$/, ''), thing_template_key: chosenTemplate }]);
    setName('');
  };
  return (
    <form class="variables-editor" aria-label="Variables" onSubmit={add}>
      <h2>Variables</h2>
      {props.variables.length === 0 ? (
        <p class="hint">None: a variable lets one dashboard show any thing of a template, written $name in widgets.</p>
      ) : (
        <ul>
          {props.variables.map((variable) => (
            <li key={variable.name}>
              <code>${variable.name}</code>: a thing of {templateName(variable.thing_template_key)}{' '}
              <button
                type="button"
                class="secondary"
                aria-label={`Remove variable ${variable.name}`}
                onClick={() => props.onChange(props.variables.filter((v) => v !== variable))}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <Failure message={templates.error} />
      {templatesReadable === false && <p class="muted">Your role may not read templates to add a variable.</p>}
      {templatesReadable && (
        <div class="filters">
          <TextField
            label="Variable name"
            hint="a letter or _, then letters, digits or _"
            value={name}
            onInput={setName}
          />
          <TemplateSelect templates={templates.data} value={chosenTemplate} onChange={setTemplate} />
          <div class="actions">
            <button type="submit" disabled={name.trim() === '' || chosenTemplate === ''}>
              Add variable
            </button>
          </div>
        </div>
      )}
    </form>
  );
}
