import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure, messageOf } from '../api/client.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** Sets the data in place (live updates). */
  set: (update: (data: T) => T) => void;
  reload: () => void;
  /** `reload` for a `Failure`'s Retry; none for a permission refusal (403), which trying again cannot change. */
  retry: (() => void) | undefined;
  /** The role may not read it (403): a page says so plainly rather than as a failure. */
  refused: boolean;
  /**
   * Reloads in a moment, however many times it is called meanwhile: a burst of live changes (a fleet
   * imported elsewhere) costs one request per second, not one per change.
   */
  reloadSoon: () => void;
}

export const UNREACHABLE = 'The server cannot be reached: trying again…';
const SOON = 1000;

/**
 * Whether the request never got an answer from the API: fetch fails with a TypeError when the
 * connection is refused or lost, and a proxy answers 502 to 504 while the server is down.
 */
export const unreachable = (failure: unknown): boolean =>
  failure instanceof TypeError || (failure instanceof ApiFailure && [502, 503, 504].includes(failure.status));

/** The most live updates kept for a read under way; past them the answer is read again a moment later. */
const TOLD_WHILE_READING = 1000;

/**
 * Runs `load` whenever a dependency changes, keeping only the latest answer. While the server cannot
 * be reached it tries again by itself (1 s, doubling up to 30 s, as the realtime connection does), so
 * the page recovers when the server is back.
 *
 * A live change told (`set`) while a read is under way may be one the read's answer, made before it,
 * does not hold: the answer would take it back (a reload the change feed asked for, landing after the
 * thing's first event was shown). `keepLive` says what is done then: 'apply' applies what `set` was
 * told to the answer too, for updates that may be applied to data already holding them (set a flag,
 * keep the newer of two values, replace an item by its key); 'readAgain' shows the answer and reads
 * again a moment later, for updates that count (an alert more in a total), as 'apply' does past a
 * bound of updates.
 */
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[],
  options: { keepLive?: 'apply' | 'readAgain' } = {},
): Loaded<T> {
  const [data, setData] = useState<T | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [refused, setRefused] = useState(false);
  const [round, setRound] = useState(0);
  const wait = useRef(1000);
  const soon = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  // The live updates told since the read under way began (keepLive 'apply'); 'readAgain' once one was
  // told with keepLive 'readAgain', or past the bound.
  const told = useRef<((data: T) => T)[] | 'readAgain' | undefined>(undefined);
  useEffect(() => {
    let current = true;
    let retry: ReturnType<typeof setTimeout> | undefined;
    if (options.keepLive !== undefined) told.current = [];
    load().then(
      (value) => {
        if (!current) return;
        const updates = told.current;
        told.current = undefined;
        wait.current = 1000;
        if (updates === 'readAgain') reloadSoon();
        setData(
          updates === undefined || updates === 'readAgain' ? value : updates.reduce((d, update) => update(d), value),
        );
        setError(undefined);
        setRefused(false);
      },
      (failure) => {
        if (!current) return;
        told.current = undefined;
        setRefused(failure instanceof ApiFailure && failure.status === 403);
        if (!unreachable(failure)) return setError(messageOf(failure));
        setError(UNREACHABLE);
        retry = setTimeout(() => setRound((r) => r + 1), wait.current);
        wait.current = Math.min(wait.current * 2, 30_000);
      },
    );
    return () => {
      current = false;
      clearTimeout(retry);
    };
  }, [...deps, round]);
  useEffect(() => () => clearTimeout(soon.current), []);
  const reloadSoon = () => {
    if (soon.current !== undefined) return;
    soon.current = setTimeout(() => {
      soon.current = undefined;
      setRound((r) => r + 1);
    }, SOON);
  };
  return {
    data,
    error,
    set: (update) => {
      const updates = told.current;
      if (updates !== undefined && updates !== 'readAgain') {
        if (options.keepLive === 'apply' && updates.length < TOLD_WHILE_READING) updates.push(update);
        else told.current = 'readAgain';
      }
      setData((old) => (old === undefined ? old : update(old)));
    },
    reload: () => setRound((r) => r + 1),
    retry: refused ? undefined : () => setRound((r) => r + 1),
    refused,
    reloadSoon,
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
