import { useEffect, useState } from 'preact/hooks';
import { api } from './api/client.ts';
import { useCaller } from './caller.ts';
import { type ConnectionState, realtime } from './realtime.ts';
import { Link, usePath } from './router.tsx';
import { GROUPS, HOME, SECTIONS } from './sections.tsx';
import { currentSession, endSession, onSessionChange, type Session } from './session.ts';
import { SignInPage } from './sign-in/sign-in-page.tsx';

export function App() {
  const [session, setSession] = useState<Session | undefined>(currentSession);
  const [notice, setNotice] = useState<string | undefined>();
  useEffect(
    () =>
      onSessionChange((next, reason) => {
        if (!next) realtime.close();
        setSession(next);
        setNotice(reason);
      }),
    [],
  );
  if (!session) return <SignInPage notice={notice} />;
  // A new session (another organisation entered) starts from a fresh shell.
  return <Shell key={session.token} session={session} />;
}

function Shell({ session }: { session: Session }) {
  const path = usePath();
  const [sectionPath = HOME, ...rest] = (path || HOME).split('/');
  const section = SECTIONS.find((s) => s.path === sectionPath);
  useEffect(() => {
    document.title = `${section?.label ?? 'Page not found'} · Thingbase`;
  }, [section]);
  const signOut = async () => {
    // The token is forgotten whatever the answer: a failed sign-out must not keep the user in.
    await api.DELETE('/api_sign_out', {}).catch(() => undefined);
    endSession();
  };
  // A wall screen (a dashboard at `.../full`): the page alone, with whether it is live; still signed in.
  if (section?.fullScreen?.(rest))
    return (
      <div class="shell full-screen">
        <main>
          <ConnectionStatus />
          <section.page key={section.path} rest={rest[0] || undefined} fullScreen />
        </main>
      </div>
    );
  return (
    <div class="shell">
      <header>
        <span class="brand">Thingbase</span>
        <ConnectionStatus />
        <span class="who">
          {session.email}
          {session.organisationName ? ` · ${session.organisationName}` : ''}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <Navigation current={section?.path} />
      <main>{section ? <section.page key={section.path} rest={rest[0] || undefined} /> : <NotFoundPage />}</main>
    </div>
  );
}

/**
 * One navigation landmark, its links grouped under their area's name; a link the caller's role may not
 * read is left out (nothing is offered until the caller is known).
 */
function Navigation({ current }: { current: string | undefined }) {
  const caller = useCaller();
  return (
    <nav aria-label="Main" class="main-nav">
      {caller &&
        GROUPS.map((group) => {
          const links = SECTIONS.filter((s) => s.group === group && !s.unlisted && s.readable(caller));
          if (links.length === 0) return null;
          const id = `nav-${group.toLowerCase()}`;
          return (
            <div key={group} class="nav-group">
              <span id={id} class="nav-group-name">
                {group}
              </span>
              <ul aria-labelledby={id}>
                {links.map((s) => (
                  <li key={s.path}>
                    <Link to={s.path} current={s.path === current}>
                      {s.label}
                    </Link>
                  </li>
                ))}
              </ul>
            </div>
          );
        })}
    </nav>
  );
}

/** A path under /console/ that names no section (a mistyped or outdated link). */
function NotFoundPage() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        The console has no page at <code>{location.pathname}</code>. <Link to="things">Go to Things</Link>
      </p>
    </section>
  );
}

const STATE_TEXT: Record<ConnectionState, string> = {
  idle: '',
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Connection lost: reconnecting…',
};

/** Whether live updates arrive; empty until a page asks for them. */
function ConnectionStatus() {
  const [state, setState] = useState<ConnectionState>(realtime.state);
  useEffect(() => realtime.onState(setState), []);
  return (
    <span role="status" class={`connection ${state}`}>
      {STATE_TEXT[state]}
    </span>
  );
}
