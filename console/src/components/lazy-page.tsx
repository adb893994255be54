import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { messageOf } from '../api/client.ts';
import { Failure } from './failure.tsx';

/**
 * A page whose code is downloaded when it is first shown (a chart library, a hashing library), so that
 * the first visit stays small: `load` is a dynamic `import()`, which the build splits into its own file.
 */
export function lazyPage<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | undefined;
  let pending: Promise<ComponentType<P>> | undefined;
  return function LazyPage(props: P) {
    const [Page, setPage] = useState<ComponentType<P> | undefined>(() => loaded);
    const [error, setError] = useState<string | undefined>();
    const [round, setRound] = useState(0);
    useEffect(() => {
      if (loaded) return;
      let current = true;
      pending ??= load().then((page) => {
        loaded = page;
        return page;
      });
      pending.then(
        (page) => current && setPage(() => page),
        (failure) => {
          pending = undefined;
          if (current) setError(messageOf(failure));
        },
      );
      return () => {
        current = false;
      };
    }, [round]);
    if (Page) return <Page {...props} />;
    if (error)
      return (
        <Failure
          message={`The page could not be loaded: ${error}`}
          retry={() => {
            setError(undefined);
            setRound((r) => r + 1);
          }}
        />
      );
    return <p aria-busy="true">Loading…</p>;
  };
}
