import { useEffect, useState } from 'preact/hooks';
import { NotificationActionsPage } from './actions/notification-actions-page.tsx';
import { api } from './api/client.ts';
import { GatewaysPage } from './gateways/gateways-page.tsx';
import { GroupsPage } from './groups/groups-page.tsx';
import { AlertsPage } from './pages/alerts.tsx';
import { AuditPage } from './pages/audit.tsx';
import { KeyPairsPage } from './pages/key-pairs.tsx';
import { RulesPage } from './pages/rules.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { UsersPage } from './pages/users.tsx';
import { type ConnectionState, realtime } from './realtime.ts';
import { Link, readSegment, usePath } from './router.tsx';
import { currentSession, endSession, onSessionChange, type Session } from './session.ts';
import { TemplatesPage } from './templates/templates-page.tsx';
import { ThingPage } from './things/thing-page.tsx';
import { ThingsPage } from './things/things-page.tsx';

const SECTIONS = [
  { path: 'things', label: 'Things' },
  { path: 'templates', label: 'Templates' },
  { path: 'groups', label: 'Groups' },
  { path: 'gateways', label: 'Gateways' },
  { path: 'alerts', label: 'Alerts' },
  { path: 'rules', label: 'Rules' },
  { path: 'notification-actions', label: 'Notification actions' },
  { path: 'key-pairs', label: 'Key pairs' },
  { path: 'users', label: 'Users' },
  { path: 'audit-trail', label: 'Audit trail' },
];

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
  return <Shell session={session} />;
}

function Shell({ session }: { session: Session }) {
  const path = usePath();
  // `/console/` itself is the things table.
  const [section = 'things', key] = (path || 'things').split('/');
  useEffect(() => {
    const title = SECTIONS.find((s) => s.path === section)?.label ?? 'Page not found';
    document.title = `${title} · Thingbase`;
  }, [section]);
  const signOut = async () => {
    // The token is forgotten whatever the answer: a failed sign-out must not keep the user in.
    await api.DELETE('/api_sign_out', {}).catch(() => undefined);
    endSession();
  };
  return (
    <>
      <header>
        <span class="brand">Thingbase</span>
        <nav aria-label="Main">
          {SECTIONS.map((s) => (
            <Link key={s.path} to={s.path} current={s.path === section}>
              {s.label}
            </Link>
          ))}
        </nav>
        <ConnectionStatus />
        <span class="who">
          {session.email}
          {session.organisationName ? ` · ${session.organisationName}` : ''}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        <Page section={section} thingKey={key ? readSegment(key) : undefined} />
      </main>
    </>
  );
}

function Page({ section, thingKey }: { section: string; thingKey: string | undefined }) {
  switch (section) {
    case 'alerts':
      return <AlertsPage />;
    case 'rules':
      return <RulesPage />;
    case 'templates':
      return <TemplatesPage />;
    case 'groups':
      return <GroupsPage />;
    case 'gateways':
      return <GatewaysPage />;
    case 'notification-actions':
      return <NotificationActionsPage />;
    case 'key-pairs':
      return <KeyPairsPage />;
    case 'users':
      return <UsersPage />;
    case 'audit-trail':
      return <AuditPage />;
    case 'things':
      return thingKey ? <ThingPage thingKey={thingKey} /> : <ThingsPage />;
    default:
      return <NotFoundPage />;
  }
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
