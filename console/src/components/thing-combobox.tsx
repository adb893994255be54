import { useEffect, useId, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import { useDebounced } from './use-load.ts';

export interface ThingChoice {
  thing_key: string;
  name: string;
}

const SHOWN = 10;

/**
 * A combobox that finds things by name or key through the API (its `search`, one page of 10), so it
 * works the same with 10,000 things; choosing one (click, or arrows and Enter) hands it to `onChoose`
 * and empties the box for the next.
 */
export function ThingCombobox(props: {
  label: string;
  onChoose: (thing: ThingChoice) => void;
  exclude?: Set<string>;
  /** What is wrong with the form's choice: shown in place of the hint, the input marked invalid. */
  error?: string | undefined;
}) {
  const id = useId();
  const [text, setText] = useState('');
  const [found, setFound] = useState<ThingChoice[]>([]);
  const [active, setActive] = useState(0);
  const [error, setError] = useState<string | undefined>();
  const keywords = useDebounced(text.trim(), 250);
  useEffect(() => {
    if (keywords === '') return setFound([]);
    let current = true;
    answer(
      api.GET('/api/v3/things', {
        params: { query: { search: keywords, per: 2 * SHOWN, order_by: 'name', order: 'asc' } },
      }),
    ).then(
      (list) => {
        if (!current) return;
        setFound(
          list.things
            .filter((t) => !props.exclude?.has(t.thing_key))
            .slice(0, SHOWN)
            .map((t) => ({ thing_key: t.thing_key, name: t.name })),
        );
        setActive(0);
        setError(undefined);
      },
      (failure) => current && setError(messageOf(failure)),
    );
    return () => {
      current = false;
    };
  }, [keywords]);
  const open = text.trim() !== '' && found.length > 0;
  const choose = (thing: ThingChoice) => {
    props.onChoose(thing);
    setText('');
    setFound([]);
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (!open) return;
    if (event.key === 'ArrowDown') setActive((a) => Math.min(a + 1, found.length - 1));
    else if (event.key === 'ArrowUp') setActive((a) => Math.max(a - 1, 0));
    else if (event.key === 'Enter') {
      const chosen = found[active];
      if (chosen) choose(chosen);
    } else if (event.key === 'Escape') setFound([]);
    else return;
    event.preventDefault();
  };
  return (
    <div class="field combobox">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        role="combobox"
        autocomplete="off"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={`${id}-list`}
        aria-activedescendant={open ? `${id}-${active}` : undefined}
        aria-describedby={`${id}-hint`}
        aria-invalid={props.error ? true : undefined}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={onKeyDown}
      />
      <small id={`${id}-hint`} class={props.error || error ? 'error' : undefined}>
        {props.error ?? error ?? 'type a name or key, then choose a thing'}
      </small>
      {/* The listbox pattern of a combobox (WAI-ARIA): focus stays in the input, which names the active option. */}
      <div id={`${id}-list`} role="listbox" aria-label={`${props.label}: matches`} hidden={!open}>
        {found.map((thing, i) => (
          // biome-ignore lint/a11y/useKeyWithClickEvents: the input handles the keys of the options it controls
          // biome-ignore lint/a11y/useFocusableInteractive: the input keeps the focus (aria-activedescendant)
          <div
            key={thing.thing_key}
            id={`${id}-${i}`}
            role="option"
            aria-selected={i === active}
            onMouseDown={(e) => e.preventDefault()}
            onClick={() => choose(thing)}
          >
            {thing.name} <code>{thing.thing_key}</code>
          </div>
        ))}
      </div>
    </div>
  );
}
