/**
 * The signed-in session: its token lives in sessionStorage (this tab only, gone when it closes), never
 * in a URL. Components listen for changes to show the sign-in page or the console.
 */
export interface Session {
  token: string;
  email: string;
  role: string;
  organisationName: string | null;
  organisationKey: string;
}

/** The session a sign-in's answer (`POST /api_sign_in`) starts. */
export function sessionOf(signedIn: {
  auth_token: string;
  email: string;
  role: string;
  organisation: { name: string | null; organisation_key: string };
}): Session {
  return {
    token: signedIn.auth_token,
    email: signedIn.email,
    role: signedIn.role,
    organisationName: signedIn.organisation.name,
    organisationKey: signedIn.organisation.organisation_key,
  };
}

const KEY = 'thingbase.session';
type Listener = (session: Session | undefined, reason?: string) => void;
const listeners = new Set<Listener>();

export function currentSession(): Session | undefined {
  const text = sessionStorage.getItem(KEY);
  return text ? (JSON.parse(text) as Session) : undefined;
}

export function startSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
  for (const listener of listeners) listener(session);
}

/** Forgets the session; `reason` is shown on the sign-in page (an expired token, say). */
export function endSession(reason?: string): void {
  sessionStorage.removeItem(KEY);
  for (const listener of listeners) listener(undefined, reason);
}

export function onSessionChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
