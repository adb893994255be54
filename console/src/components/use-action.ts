import { useState } from 'preact/hooks';
import { messageOf } from '../api/client.ts';

export interface Action {
  busy: boolean;
  /** The API's message about the last run, shown next to the control that ran it. */
  error: string | undefined;
  /** Runs `action`; answers whether it succeeded. What the form holds is the caller's to keep. */
  run: (action: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
}

/** A request a control sends (a form's submit, a select's change): busy meanwhile, its refusal kept. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  return {
    busy,
    error,
    run: async (action) => {
      setBusy(true);
      setError(undefined);
      try {
        await action();
        return true;
      } catch (failure) {
        setError(messageOf(failure));
        return false;
      } finally {
        setBusy(false);
      }
    },
    clear: () => setError(undefined),
  };
}
