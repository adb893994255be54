import { useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import { Field } from '../components/field.tsx';
import { sessionOf, startSession } from '../session.ts';

export function SignInPage({ notice }: { notice: string | undefined }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [organisationKey, setOrganisationKey] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await answer(
        api.POST('/api_sign_in', {
          body: { email, password, ...(organisationKey.trim() ? { organisation_key: organisationKey.trim() } : {}) },
        }),
      );
      startSession(sessionOf(session));
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>Thingbase</h1>
      <form onSubmit={submit}>
        {notice && <p role="status">{notice}</p>}
        <Field label="Email">
          {(id) => (
            <input
              id={id}
              type="email"
              autocomplete="username"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Password">
          {(id) => (
            <input
              id={id}
              type="password"
              autocomplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Organisation key" hint="optional: a child organisation to sign in to">
          {(id, describedBy) => (
            <input
              id={id}
              aria-describedby={describedBy}
              value={organisationKey}
              onInput={(e) => setOrganisationKey(e.currentTarget.value)}
            />
          )}
        </Field>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
