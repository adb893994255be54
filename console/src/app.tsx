import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api } from './api/client.ts';
import { type Caller, useCaller } from './caller.ts';
import { type ConnectionState, realtime } from './realtime.ts';
import { Link, navigate, usePath } from './router.tsx';
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
  const caller = useCaller();
  // `/console/` shows the Overview, or to a role that may not read it the first page it may read
  // (docs/console.md, "Navigation"); it waits for the role to be known, so that nothing asks in vain.
  const home = homeOf(caller);
  const [sectionPath = home, ...rest] = (path || home).split('/');
  const section = SECTIONS.find((s) => s.path === sectionPath);
  // The navigation on a narrow screen: closed until the Menu button opens it, closed again once a page is chosen.
  const [menuOpen, setMenuOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const fullScreen = !!section?.fullScreen?.(rest);
  const header = useHeaderHeight(fullScreen);
  usePageFocus(path, () => setMenuOpen(false));
  useFocusKeeper();
  // The section's name on every change of page (a dashboard's list after a dashboard too); a page naming
  // one thing (a thing, a dashboard) puts its name there once read, in an effect, so after this one.
  useLayoutEffect(() => {
    document.title = `${section?.label ?? 'Page not found'} · Thingbase`;
  }, [section, path]);
  // Escape within the open menu closes it and gives the focus back to its button.
  const closeMenu = () => {
    setMenuOpen(false);
    menuButton.current?.focus();
  };
  const signOut = async () => {
    // The token is forgotten whatever the answer: a failed sign-out must not keep the user in.
    await api.DELETE('/api_sign_out', {}).catch(() => undefined);
    endSession();
    // Whoever signs in next starts at `/console/` (the Overview, or the first page their role may read),
    // not on a page of this session's organisation (a thing of a child organisation the parent's admin
    // cannot see). A session that expires keeps its page.
    navigate('');
  };
  // A wall screen (a dashboard at `.../full`): the page alone, with whether it is live; still signed in.
  if (section && fullScreen)
    return (
      <div class="shell full-screen">
        <main id={MAIN_ID} tabIndex={-1}>
          <ConnectionStatus />
          <section.page key={section.path} rest={rest[0] || undefined} fullScreen />
        </main>
      </div>
    );
  return (
    <div class="shell">
      <a
        class="skip-link"
        href={`#${MAIN_ID}`}
        onClick={(event) => {
          // Focus, not a fragment in the address: the router owns the URL, and Back should leave the page.
          // The page's heading, as after a change of page, brought into view below the header.
          event.preventDefault();
          focusPage();
        }}
      >
        Skip to content
      </a>
      <header ref={header}>
        <span class="brand">Thingbase</span>
        <ConnectionStatus />
        {/* Shown below 700 px only (style.css); before the account, so that Tab goes from it to Sign out, then the links. */}
        <button
          type="button"
          class="menu-button"
          ref={menuButton}
          aria-expanded={menuOpen}
          aria-controls={NAV_ID}
          onClick={() => setMenuOpen((open) => !open)}
          onKeyDown={(event) => {
            if (event.key === 'Escape') setMenuOpen(false);
          }}
        >
          Menu
        </button>
        {/* At the header's end on a wide screen; below 700 px the open menu's first line, hidden with it (style.css). */}
        <div class="account">
          <span class="who">
            {session.email}
            {session.organisationName ? ` · ${session.organisationName}` : ''}
          </span>
          <button
            type="button"
            onClick={signOut}
            onKeyDown={(event) => {
              if (event.key === 'Escape' && menuOpen) closeMenu();
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <Navigation
        current={section?.path}
        open={menuOpen}
        onChoose={() => {
          setMenuOpen(false);
          // A new page has taken the focus by now (usePageFocus); the link of the page already shown
          // has it still, or lost it as the navigation closed: it goes to that page.
          setTimeout(() => {
            const active = document.activeElement;
            if (!active || active === document.body || active.closest(`#${NAV_ID}`)) focusPage();
          });
        }}
        onEscape={closeMenu}
      />
      <main id={MAIN_ID} tabIndex={-1}>
        {!path && caller === undefined ? null : section ? (
          <section.page key={section.path} rest={rest[0] || undefined} />
        ) : (
          <NotFoundPage />
        )}
      </main>
    </div>
  );
}

/** The section `/console/` shows: the Overview, else the first listed that the role may read. */
function homeOf(caller: Caller | undefined): string {
  if (caller === undefined) return HOME;
  const readable = SECTIONS.filter((s) => !s.unlisted && s.readable(caller));
  return readable.some((s) => s.path === HOME) ? HOME : (readable[0]?.path ?? HOME);
}

const MAIN_ID = 'main';
const NAV_ID = 'main-nav';
/** How long the focus follows a page still loading (its code, its data) to its heading. */
const HEADING_WAIT_MS = 10_000;
/** Ends the following of the last page focused (focusPage). */
let stopFollowing = (): void => undefined;

/**
 * Moves the focus to the page's first-level heading, scrolled into view (below the header on a phone),
 * or to the main region until the page shows one, so that a screen reader says where the user now is
 * and Tab continues from the page's top. After a change of page, and from Skip to content.
 */
function focusPage(): void {
  stopFollowing();
  const main = document.getElementById(MAIN_ID);
  if (!main) return;
  let focused: HTMLElement = main;
  const focusHeading = (preventScroll: boolean) => {
    const heading = focusHeadingOf(main, preventScroll);
    focused = heading ?? main;
    // The whole heading, not just a part of the region: a page scrolled down shows its top again.
    if (!preventScroll && heading) heading.scrollIntoView({ block: 'nearest' });
  };
  focusHeading(false);
  // A page still loading shows its heading later, or draws it anew once its data is read: the focus
  // follows it, until the user moves it elsewhere.
  const observer = new MutationObserver(() => {
    const lost = !focused.isConnected && (document.activeElement ?? document.body) === document.body;
    if (document.activeElement === main || lost) focusHeading(true);
  });
  const moved = (event: FocusEvent) => {
    if (event.target !== focused) stop();
  };
  const stop = () => {
    observer.disconnect();
    document.removeEventListener('focusin', moved);
    clearTimeout(timer);
  };
  const timer = setTimeout(stop, HEADING_WAIT_MS);
  observer.observe(main, { childList: true, subtree: true });
  document.addEventListener('focusin', moved);
  stopFollowing = stop;
}

/**
 * Keeps `--header-height` on the root element at the header's height as it changes (on a phone, the
 * open menu's account line adds to it; on a wider screen, its items may wrap): on a phone the header
 * stays at the top of the screen, and what scrolls into view (a focused heading, the open navigation)
 * goes below it (style.css). No header (full screen), no property.
 */
function useHeaderHeight(fullScreen: boolean) {
  const header = useRef<HTMLElement>(null);
  useLayoutEffect(() => {
    const element = header.current;
    if (!element) return;
    const root = document.documentElement.style;
    const measure = new ResizeObserver(() => root.setProperty('--header-height', `${element.offsetHeight}px`));
    measure.observe(element);
    return () => {
      measure.disconnect();
      root.removeProperty('--header-height');
    };
  }, [fullScreen]);
  return header;
}

/**
 * On a change of page (a link, Back, a page moving to another), not on the first one: `onChange`, then
 * the focus to the new page (focusPage). Before the browser paints, so nothing the user does first is
 * taken from them.
 */
/** Focuses the page's first-level heading (focusable from script only), else `main`; answers the heading. */
function focusHeadingOf(main: HTMLElement, preventScroll: boolean): HTMLElement | null {
  const heading = main.querySelector<HTMLElement>('h1');
  if (heading) heading.tabIndex = -1;
  (heading ?? main).focus({ preventScroll });
  return heading;
}

/**
 * Keeps the keyboard's place when the control holding the focus goes away: `New thing` gives way to its
 * form, the form to `New thing` again, `Acknowledge` to a list without the alert. The focus would fall
 * to the page's body, so that a screen reader says nothing and Tab starts again from the top; it goes
 * to the first field of a form that came in its place, or from a form that went to a button that came
 * in its place, else to the page's heading.
 */
function useFocusKeeper(): void {
  useEffect(() => {
    let held: Element | undefined;
    const noted = (event: FocusEvent) => {
      held = event.target instanceof Element ? event.target : undefined;
    };
    const observer = new MutationObserver((records) => {
      if (!held || held.isConnected || (document.activeElement ?? document.body) !== document.body) return;
      const was = held;
      held = undefined;
      const main = document.getElementById(MAIN_ID);
      const added = records.flatMap((r) => [...r.addedNodes]).filter((n): n is Element => n instanceof Element);
      const form = added.map((n) => (n.matches('form') ? n : n.querySelector('form'))).find((f) => f !== null);
      const field = form?.querySelector<HTMLElement>('input:not([type="hidden"]), select, textarea');
      if (field) return field.focus();
      // A form that went (Cancel, Escape, Save) hands it to the button back in its place (`New thing`).
      const button = was.closest('form')
        ? added.map((n) => (n.matches('button') ? n : n.querySelector('button'))).find((b) => b !== null)
        : undefined;
      if (button instanceof HTMLElement) return button.focus();
      if (main) focusHeadingOf(main, true);
    });
    document.addEventListener('focusin', noted);
    observer.observe(document.body, { childList: true, subtree: true });
    return () => {
      document.removeEventListener('focusin', noted);
      observer.disconnect();
    };
  }, []);
}

function usePageFocus(path: string, onChange: () => void): void {
  const shown = useRef(path);
  useLayoutEffect(() => {
    if (shown.current === path) return;
    shown.current = path;
    onChange();
    focusPage();
  }, [path]);
}

/**
 * One navigation landmark, its links grouped under their area's name; a link the caller's role may not
 * read is left out (nothing is offered until the caller is known).
 */
function Navigation(props: {
  current: string | undefined;
  /** Whether it is shown below 700 px (always shown on wider screens). */
  open: boolean;
  /** A link was followed (by the router, not into a new tab). */
  onChoose: () => void;
  onEscape: () => void;
}) {
  const caller = useCaller();
  return (
    <nav
      id={NAV_ID}
      aria-label="Main"
      class={props.open ? 'main-nav open' : 'main-nav'}
      onClick={(event) => {
        // Link prevents the browser's own navigation when the router follows it (not into a new tab).
        if (event.defaultPrevented && (event.target as Element).closest('a')) props.onChoose();
      }}
      onKeyDown={(event) => {
        if (event.key === 'Escape' && props.open) props.onEscape();
      }}
    >
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
                    <Link to={s.path} current={s.path === props.current}>
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

/** The same in fewer words, shown where the header has no room for the whole (style.css). */
const STATE_SHORT: Partial<Record<ConnectionState, string>> = {
  reconnecting: 'Reconnecting…',
};

/**
 * Whether live updates arrive; empty until a page asks for them. A status that has fewer words for a
 * narrow header keeps its whole text for screen readers, the shorter one hidden from them.
 */
function ConnectionStatus() {
  const [state, setState] = useState<ConnectionState>(realtime.state);
  useEffect(() => realtime.onState(setState), []);
  const short = STATE_SHORT[state];
  return (
    <span role="status" class={`connection ${state}`}>
      {short ? (
        <>
          <span class="connection-whole">{STATE_TEXT[state]}</span>
          <span class="connection-short" aria-hidden="true">
            {short}
          </span>
        </>
      ) : (
        STATE_TEXT[state]
      )}
    </span>
  );
}
