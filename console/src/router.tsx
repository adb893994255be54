/**
 * Pages are paths under /console/ (the server answers index.html for each), moved between with the
 * History API so that the browser's back button and bookmarks work. A page's own settings (a list's
 * search and page) live in the query string, so that coming back to it finds them again.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export const BASE = '/console/';
const listeners = new Set<() => void>();

/** The page's path below /console/, without slashes at either end: `things/boiler-1`. */
export const currentPath = (): string => location.pathname.slice(BASE.length).replace(/\/+$/, '');

/**
 * A key as one segment of a path. A browser takes the segments `.` and `..` (even written `%2E`) for
 * steps in the path, so the dots of such a segment are escaped twice (`%252E`), which `readSegment`
 * undoes; keys never hold `%` (docs/api.md), so nothing else reads the same.
 */
export function segment(text: string): string {
  return text === '.' || text === '..' ? text.replaceAll('.', '%252E') : encodeURIComponent(text);
}

/** The text of a path segment written by `segment`. */
export function readSegment(written: string): string {
  let text = written;
  try {
    text = decodeURIComponent(written);
  } catch {
    // Not valid percent-encoding: taken as written.
  }
  return /^(%2E){1,2}$/i.test(text) ? '.'.repeat(text.length / 3) : text;
}

/**
 * What to ask before the page is left while it holds unsaved work (useLeaveGuard), as the page last
 * rendered it, and the address it has: Back, which the browser has already taken, is undone when the
 * user stays.
 */
let guard: { asked: { current: string | undefined }; url: string } | undefined;

/** Whether the page may be left: always without a guard, else when the user says so. */
function mayLeave(): boolean {
  const question = guard?.asked.current;
  if (question === undefined) return true;
  if (!confirm(question)) return false;
  guard = undefined;
  return true;
}

/**
 * While `question` is given (the page holds unsaved work), leaving it asks first: a link of the
 * console, Back and Forward (confirm), reloading or closing the tab (the browser's own question).
 * The question is read as the page last rendered it: work just saved is not asked about, even before
 * the effects of that render have run (a browser runs them after the next frame).
 */
export function useLeaveGuard(question: string | undefined): void {
  const asked = useRef(question);
  asked.current = question;
  useEffect(() => {
    if (question === undefined) return;
    const mine = { asked, url: location.href };
    guard = mine;
    const onBeforeUnload = (event: BeforeUnloadEvent) => {
      if (asked.current !== undefined) event.preventDefault();
    };
    addEventListener('beforeunload', onBeforeUnload);
    return () => {
      if (guard === mine) guard = undefined;
      removeEventListener('beforeunload', onBeforeUnload);
    };
  }, [question]);
}

export function navigate(path: string): void {
  if (!mayLeave()) return;
  history.pushState(null, '', BASE + path);
  for (const listener of listeners) listener();
}

// Back and Forward: the address has changed already; staying puts the page's own back.
addEventListener('popstate', () => {
  const url = guard?.url;
  if (url !== undefined && !mayLeave()) {
    history.pushState(null, '', url);
    return;
  }
  for (const listener of listeners) listener();
});

/** The query string's parameters of the page shown. */
export const currentQuery = (): URLSearchParams => new URLSearchParams(location.search);

/**
 * The value among `choices` (value and label pairs, the first the default) that `asked` names, from the
 * address: a value the page does not offer (an old link, `?status=all`) is the default.
 */
export const choiceOf = <C extends readonly (readonly [string, string])[]>(
  choices: C,
  asked: string | null,
): C[number][0] => choices.find(([value]) => value === asked)?.[0] ?? (choices[0] as C[number])[0];

/**
 * Writes the page's settings into its query string (empty ones left out) in place, without a new
 * history entry: the back button leaves the page, and returns to it as it was.
 */
export function keepQuery(settings: Record<string, string>): void {
  const query = new URLSearchParams(Object.entries(settings).filter(([, value]) => value !== ''));
  const search = query.toString() ? `?${query}` : '';
  if (search !== location.search) history.replaceState(history.state, '', location.pathname + search);
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return path;
}

export function Link(props: { to: string; children: ComponentChildren; current?: boolean }) {
  return (
    <a
      href={BASE + props.to}
      aria-current={props.current ? 'page' : undefined}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}
