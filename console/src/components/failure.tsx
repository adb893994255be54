/**
 * The API's message about what could not be done, announced to assistive technology; with `retry`, a
 * button to try again (useLoad's `retry`, which a permission refusal has not).
 */
export function Failure({ message, retry }: { message: string | undefined; retry?: () => void }) {
  if (!message) return null;
  return (
    <p role="alert" class="error">
      {message}
      {retry && (
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
