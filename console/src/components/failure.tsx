/** The API's message about what could not be done, announced to assistive technology. */
export function Failure({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p role="alert" class="error">
      {message}
    </p>
  );
}
