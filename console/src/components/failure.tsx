import { isRefusal } from './use-load.ts';

/**
 * The API's message about what could not be done, announced to assistive technology; with `retry`, a
 * button to try again, left out for a permission refusal (403), which trying again cannot help.
 */
export function Failure({ message, retry }: { message: string | undefined; retry?: () => void }) {
  if (!message) return null;
  return (
    <p role="alert" class="error">
      {message}
      {retry && !isRefusal(message) && (
        <>
          {' '}
          <button type="button" class="secondary" onClick={retry}>
            Retry
          </button>
        </>
      )}
    </p>
  );
}
