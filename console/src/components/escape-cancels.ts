import type { RefObject } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * A form's way out from the keyboard (docs/console.md, "Using it"): Escape pressed anywhere in the
 * form around `inside` cancels it as its Cancel button does, unless a control of the form used the key
 * itself (a combobox closing its list marks it handled). Nothing when there is no `cancel`.
 */
export function useEscapeCancels(inside: RefObject<HTMLElement | null>, cancel: (() => void) | undefined): void {
  const latest = useRef(cancel);
  latest.current = cancel;
  const offered = cancel !== undefined;
  useEffect(() => {
    const form = offered ? inside.current?.closest('form') : undefined;
    if (!form) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented || event.isComposing) return;
      event.preventDefault();
      latest.current?.();
    };
    form.addEventListener('keydown', onKey);
    return () => form.removeEventListener('keydown', onKey);
  }, [inside, offered]);
}
