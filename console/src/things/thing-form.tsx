import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useMayRead } from '../caller.ts';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldSubmit } from '../components/field-errors.ts';
import { FormButtons } from '../components/form-buttons.tsx';
import { loadTemplates, TemplateSelect } from '../components/template-select.tsx';
import { useLoad } from '../components/use-load.ts';

/** The fields of a thing its forms and actions use. */
export type Thing = Pick<
  paths['/api/v3/things/{thing_key}']['get']['responses'][200]['content']['application/json']['thing'],
  'thing_key' | 'name' | 'description' | 'tags' | 'thing_template_key' | 'thing_template_name' | 'bi_directional'
>;

/** The fields whose refusal the API names (`thing.name`), each said under its field. */
const FIELDS = ['thing.name', 'thing.thing_key', 'thing.thing_template_key', 'thing.description', 'thing.tags'];

/**
 * A thing's own fields: `New thing` (with an optional `Key`, generated when empty, and `Create`) or
 * `Edit` of an existing thing (`Save`; its key cannot change). `onDone` gets the saved thing's key.
 */
export function ThingForm({
  thing,
  onDone,
}: {
  thing: Thing | undefined;
  onDone: (savedKey: string | undefined) => void;
}) {
  const [name, setName] = useState(thing?.name ?? '');
  const [key, setKey] = useState('');
  const [template, setTemplate] = useState(thing?.thing_template_key ?? '');
  const [description, setDescription] = useState(thing?.description ?? '');
  const [tags, setTags] = useState(thing?.tags ?? '');
  const [biDirectional, setBiDirectional] = useState(thing?.bi_directional ?? false);
  // A role that may not read templates keeps the thing's (Things offers it no New thing): nothing to choose.
  const templatesReadable = useMayRead('thing_template');
  const keepsTemplate = templatesReadable === false;
  const templates = useLoad(async () => {
    if (templatesReadable === undefined) return undefined;
    if (keepsTemplate) return [];
    const list = await loadTemplates();
    // A new thing starts with the Default template, which devices' own registrations use.
    if (!thing) setTemplate((t) => t || (list.find((x) => x.name === 'Default') ?? list[0])?.thing_template_key || '');
    return list;
  }, [templatesReadable]);
  const submit = useFieldSubmit(FIELDS, async () => {
    const fields = {
      name,
      description,
      tags,
      ...(keepsTemplate ? {} : { thing_template_key: template }),
      bi_directional: biDirectional,
    };
    if (thing) {
      await answerByField(
        api.PUT('/api/v3/things/{thing_key}', {
          params: { path: { thing_key: thing.thing_key } },
          body: { thing: fields },
        }),
      );
      onDone(thing.thing_key);
    } else {
      const created = await answerByField(
        api.POST('/api/v3/things', {
          body: {
            thing: { ...fields, thing_template_key: template, ...(key.trim() ? { thing_key: key.trim() } : {}) },
          },
        }),
      );
      onDone(created.thing.thing_key);
    }
  });
  const title = thing ? `Edit ${thing.name}` : 'New thing';
  return (
    <form onSubmit={submit.onSubmit} class="panel" aria-label={title}>
      <h2>{title}</h2>
      <TextField label="Name" required value={name} onInput={setName} error={submit.of('thing.name')} />
      {!thing && (
        <TextField
          label="Key"
          hint="optional: made by the server when empty; it cannot change later"
          value={key}
          onInput={setKey}
          error={submit.of('thing.thing_key')}
        />
      )}
      {keepsTemplate ? (
        <p class="muted">Your role may not read templates: the thing keeps {thing?.thing_template_name}.</p>
      ) : (
        <TemplateSelect
          templates={templates.data}
          value={template}
          onChange={setTemplate}
          error={templates.error ?? submit.of('thing.thing_template_key')}
          required
        />
      )}
      <TextField
        label="Description"
        value={description}
        onInput={setDescription}
        error={submit.of('thing.description')}
      />
      <TextField label="Tags" hint="comma-separated" value={tags} onInput={setTags} error={submit.of('thing.tags')} />
      <label class="check">
        <input type="checkbox" checked={biDirectional} onChange={(e) => setBiDirectional(e.currentTarget.checked)} />{' '}
        Bi-directional
      </label>
      <Failure message={submit.error} />
      <FormButtons busy={submit.busy} submitLabel={thing ? 'Save' : 'Create'} onCancel={() => onDone(undefined)} />
    </form>
  );
}
