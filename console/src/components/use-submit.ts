import { useState } from 'preact/hooks';
import { messageOf } from '../api/client.ts';

export interface Submit {
  /** The API's message about the last attempt, shown next to the control that sent it. */
  error: string | undefined;
  busy: boolean;
  /** A form's submit handler: runs `send`, keeping the API's message when it is refused. */
  onSubmit: (event: Event) => Promise<void>;
}

/**
 * A form's sending: the form keeps what was typed whatever the answer (its fields are its own state),
 * and a refusal leaves the API's message in `error` until the next attempt.
 */
export function useSubmit(send: () => Promise<unknown>): Submit {
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  return {
    error,
    busy,
    onSubmit: async (event: Event) => {
      event.preventDefault();
      setBusy(true);
      setError(undefined);
      try {
        await send();
      } catch (failure) {
        setError(messageOf(failure));
      } finally {
        setBusy(false);
      }
    },
  };
}
