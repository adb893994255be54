import { useEffect, useState } from 'preact/hooks';
import { messageOf } from '../api/client.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** Sets the data in place (live updates). */
  set: (update: (data: T) => T) => void;
  reload: () => void;
}

/** Runs `load` whenever a dependency changes, keeping only the latest answer. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    load().then(
      (value) => {
        if (!current) return;
        setData(value);
        setError(undefined);
      },
      (failure) => current && setError(messageOf(failure)),
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  return {
    data,
    error,
    set: (update) => setData((old) => (old === undefined ? old : update(old))),
    reload: () => setRound((r) => r + 1),
  };
}

/** The value, once it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}
