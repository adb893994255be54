/**
 * The things a widget names, chosen rather than typed: the rule form's search (ThingCombobox, by name
 * or key through the API) and, for each variable of the dashboard, a button naming it (`$machine`).
 * `single` keeps one choice (a value's or a gauge's thing); otherwise each choice is added to a list.
 */
import { answer, api } from '../api/client.ts';
import { useMayRead } from '../caller.ts';
import { RowButton } from '../components/row-button.tsx';
import { type ThingChoice, ThingCombobox } from '../components/thing-combobox.tsx';
import { useLoad } from '../components/use-load.ts';

/** The names of things known only by key (a widget's settings): null for one not found, or not the viewer's to read. */
async function namesOf(keys: string[]): Promise<Record<string, string | null>> {
  const found = await Promise.all(
    keys.map((thing_key) =>
      answer(api.GET('/api/v3/things/{thing_key}', { params: { path: { thing_key } } })).then(
        (a) => a.thing.name,
        () => null,
      ),
    ),
  );
  return Object.fromEntries(keys.map((key, i) => [key, found[i] ?? null]));
}

export function ThingPicker(props: {
  legend: string;
  single?: boolean;
  chosen: ThingChoice[];
  /** The dashboard's variable names, offered as `$<name>`. */
  variables: readonly string[];
  error?: string | undefined;
  onChange: (chosen: ThingChoice[]) => void;
}) {
  const { chosen, single } = props;
  const keys = new Set(chosen.map((t) => t.thing_key));
  const add = (thing: ThingChoice) => props.onChange(single ? [thing] : [...chosen, thing]);
  const nameless = chosen.filter((t) => !t.name && !t.thing_key.startsWith('$')).map((t) => t.thing_key);
  // Things are found, and named, for a role that may read them; another keeps the keys chosen
  // (docs/console.md, "Pages").
  const thingsReadable = useMayRead('thing');
  const names = useLoad(
    async () => (thingsReadable ? namesOf(nameless) : ({} as Record<string, string | null>)),
    [nameless.join(','), thingsReadable],
  );
  const nameOf = (thing: ThingChoice): string | null | undefined => thing.name || names.data?.[thing.thing_key];
  return (
    <fieldset class="thing-picker">
      <legend>{props.legend}</legend>
      {chosen.length > 0 && (
        <ul class="members" aria-label={single ? 'Thing chosen' : 'Things chosen'}>
          {chosen.map((thing) => (
            <li key={thing.thing_key}>
              {thing.thing_key.startsWith('$') ? 'Variable ' : nameOf(thing) && `${nameOf(thing)} `}
              <code>{thing.thing_key}</code>
              {nameOf(thing) === null && ' (not found, or not yours to read)'}{' '}
              {!single && (
                <RowButton
                  label="Remove"
                  about={nameOf(thing) || thing.thing_key}
                  onClick={() => props.onChange(chosen.filter((t) => t.thing_key !== thing.thing_key))}
                />
              )}
            </li>
          ))}
        </ul>
      )}
      {thingsReadable === false ? (
        <>
          <p class="muted">Your role may not read things to {single ? 'find one' : 'add one'}.</p>
          {props.error && <p class="error">{props.error}</p>}
        </>
      ) : (
        <ThingCombobox label={single ? 'Find thing' : 'Add thing'} exclude={keys} error={props.error} onChoose={add} />
      )}
      {props.variables.length > 0 && (
        <div class="actions">
          {props.variables.map((name) => (
            <button
              key={name}
              type="button"
              class="secondary"
              disabled={keys.has(`$${name}`)}
              onClick={() => add({ thing_key: `$${name}`, name: '' })}
            >
              {single ? 'Use' : 'Add'} ${name}
            </button>
          ))}
        </div>
      )}
    </fieldset>
  );
}
