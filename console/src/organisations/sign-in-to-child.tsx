import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { TextField } from '../components/field.tsx';
import { FormActions } from '../components/form-actions.tsx';
import { useAction } from '../components/use-action.ts';
import { realtime } from '../realtime.ts';
import { navigate } from '../router.tsx';
import { currentSession, sessionOf, startSession } from '../session.ts';

/**
 * `Sign in to <name>`: the API lets an OEM parent's account admin into a child only through a sign-in
 * naming it (`organisation_key`, docs/api.md), so the admin's password is asked for in a dialog. The
 * new session replaces the parent's, which is signed out; signing out of the child returns to the
 * sign-in page.
 */
export function SignInToChild({ organisation }: { organisation: { name: string | null; organisation_key: string } }) {
  const name = organisation.name ?? organisation.organisation_key;
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const action = useAction();
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (open && element && !element.open) element.showModal();
    if (!open && element?.open) element.close();
  }, [open]);
  const submit = async (event: Event) => {
    event.preventDefault();
    const email = currentSession()?.email ?? '';
    const body = { email, password, organisation_key: organisation.organisation_key };
    let session: Awaited<ReturnType<typeof signIn>> | undefined;
    const signIn = () => answer(api.POST('/api_sign_in', { body }));
    if (!(await action.run(async () => (session = await signIn()))) || !session) return;
    // The parent's session is ended, its live connection first (its revocation would end the new one).
    realtime.close();
    await api.DELETE('/api_sign_out', {}).catch(() => undefined);
    navigate('overview');
    startSession(sessionOf(session));
  };
  return (
    <>
      <button
        type="button"
        class="secondary"
        onClick={() => {
          action.clear();
          setOpen(true);
        }}
      >
        Sign in to {name}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId} onClose={() => setOpen(false)}>
        {open && (
          <form onSubmit={submit}>
            <h2 id={titleId}>Sign in to {name}</h2>
            <p>As its account admin, with your own password. Your session here ends.</p>
            <TextField
              label="Password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onInput={setPassword}
            />
            <FormActions action={action} submit="Sign in" onCancel={() => setOpen(false)} />
          </form>
        )}
      </dialog>
    </>
  );
}
