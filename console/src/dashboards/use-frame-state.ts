import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * State that live messages change often: `update` applies at once to what is kept, and the widget is
 * drawn again at most once per animation frame, however many messages arrive meanwhile.
 */
export function useFrameState<T>(initial: T): [T, (update: (value: T) => T) => void, (value: T) => void] {
  const [shown, setShown] = useState(initial);
  const kept = useRef(initial);
  const frame = useRef(0);
  useEffect(() => () => cancelAnimationFrame(frame.current), []);
  const update = (change: (value: T) => T) => {
    kept.current = change(kept.current);
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      setShown(kept.current);
    });
  };
  const reset = (value: T) => {
    kept.current = value;
    cancelAnimationFrame(frame.current);
    frame.current = 0;
    setShown(value);
  };
  return [shown, update, reset];
}
