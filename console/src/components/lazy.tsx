import { type ComponentType, h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { messageOf } from '../api/client.ts';
import { Failure } from './failure.tsx';

/**
 * A component whose module is fetched the first time it is shown (a dynamic import, a chunk of its own
 * in the build), so that a heavy library such as the chart's stays out of the first visit's JavaScript.
 */
export function lazy<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | undefined;
  let pending: Promise<ComponentType<P>> | undefined;
  return function Lazy(props: P) {
    const [, setReady] = useState(false);
    const [error, setError] = useState<string | undefined>();
    useEffect(() => {
      if (loaded) return;
      let current = true;
      pending ??= load().then((component) => {
        loaded = component;
        return component;
      });
      pending.then(
        () => current && setReady(true),
        (failure) => {
          // Tried again the next time it is shown (a deployment replaced the chunk, the network failed).
          pending = undefined;
          if (current) setError(messageOf(failure));
        },
      );
      return () => {
        current = false;
      };
    }, []);
    if (error) return <Failure message={error} />;
    return loaded ? h(loaded, props) : null;
  };
}
