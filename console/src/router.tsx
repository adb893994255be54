/**
 * Pages are paths under /console/ (the server answers index.html for each), moved between with the
 * History API so that the browser's back button and bookmarks work.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console/';
const listeners = new Set<() => void>();

/** The page's path below /console/, without slashes at either end: `things/boiler-1`. */
export const currentPath = (): string => location.pathname.slice(BASE.length).replace(/\/+$/, '');

export function navigate(path: string): void {
  history.pushState(null, '', BASE + path);
  for (const listener of listeners) listener();
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
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
