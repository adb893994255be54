/**
 * Browser tests drive Debian's Chromium (apt-get install chromium) with playwright-core against the
 * built console of a real server. Without Chromium, or without a built console, they skip with a
 * reason, except under CI=true, where that is a failure (as PostgreSQL's suites do, stores.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Locator, type Page, type WebSocketRoute } from 'playwright-core';
import { loadConfig } from '../../src/core/config.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const consoleIndex = join(loadConfig({}).consoleDir, 'index.html');

function reasonToSkip(): string | false {
  if (!existsSync(CHROMIUM_PATH)) return `no Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium)`;
  if (!existsSync(consoleIndex)) return `the console is not built (no ${consoleIndex}; npm run build)`;
  return false;
}

const skip = reasonToSkip();
if (skip && process.env.CI) throw new Error(`CI needs the browser tests: ${skip}`);
export const browserSkip: string | false = skip ? `${skip}; skipping the browser tests` : false;

/** Chromium for a test; `extra` adds arguments and names defaults of Playwright's to leave out. */
export function launchBrowser(extra: { args?: string[]; ignoreDefaultArgs?: string[] } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      ...(extra.args ?? []),
    ],
    ...(extra.ignoreDefaultArgs ? { ignoreDefaultArgs: extra.ignoreDefaultArgs } : {}),
  });
}

/** Where screenshots go (git-ignored), to be looked at after a run. */
export const SCREENSHOTS = join('test-results', 'console');

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Problems the page reports: Content-Security-Policy refusals, uncaught errors. */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/.test(message.text())) {
      problems.push(message.text());
    }
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  return problems;
}

/**
 * A new tab of its own at `url` (under /console/), signed in as `email`: the sign-in page shows at any
 * path, and the path's page follows. What the tab reports (watchProblems) is added to `problems`.
 */
export async function signedInTab(
  browser: Browser,
  url: string,
  credentials: { email: string; password: string },
  problems: string[][],
): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  problems.push(watchProblems(page));
  await page.goto(url);
  await page.getByLabel('Email', { exact: true }).fill(credentials.email);
  await page.getByLabel('Password', { exact: true }).fill(credentials.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  return page;
}

/** The text of what describes a control (its aria-describedby): its hint, or the message about it. */
export function descriptionOf(control: Locator): Promise<string> {
  return control.evaluate((element) =>
    (element.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .map((id: string) => element.ownerDocument.getElementById(id)?.textContent ?? '')
      .join(' '),
  );
}

/** Whether `target` has the focus. */
export function isFocused(target: Locator): Promise<boolean> {
  return target.evaluate((element) => element === element.ownerDocument.activeElement);
}

/** Waits (5 s at most) for the focus to be on the first-level heading `name`; fails naming what has it. */
export async function assertHeadingFocused(page: Page, name: string): Promise<void> {
  // Asked from here rather than with waitForFunction, whose polling the console's Content-Security-Policy refuses.
  const holder = `document.activeElement?.tagName === 'H1' && document.activeElement.textContent === ${JSON.stringify(name)} ? '' : document.activeElement?.outerHTML.slice(0, 100) ?? 'nothing'`;
  let found = await page.evaluate<string>(holder);
  for (const deadline = Date.now() + 5000; found !== '' && Date.now() < deadline; ) {
    await page.waitForTimeout(50);
    found = await page.evaluate<string>(holder);
  }
  assert.equal(found, '', `the heading ${name} has the focus, not ${found}`);
}

/** What a dashboard's time series draws (chart.tsx, uPlot), as drawnChart measures it. */
export type DrawnChart = {
  /** The plotting box's height, and the canvas's (axes included), in CSS pixels. */
  plot: number;
  canvas: number;
  /** How many labels the y axis shows. */
  yLabels: number;
  /** How far below the canvas the legend starts. */
  legendBelow: number;
  legendInside: boolean;
  legendScrolls: boolean;
  widgetScrolls: boolean;
};

/**
 * The plotting box, the canvas and the legend of the time series widget titled `title`; and how many
 * labels its y axis has, which uPlot draws on the canvas: bands of rows of the canvas, left of the
 * plotting box and level with it, that hold something drawn.
 */
export function drawnChart(page: Page, title: string): Promise<DrawnChart> {
  return page.evaluate(`(() => {
    const widget = [...document.querySelectorAll('section.widget')].find(
      (section) => section.querySelector('h2')?.textContent === ${JSON.stringify(title)},
    );
    const canvas = widget.querySelector('.u-wrap canvas');
    const over = widget.querySelector('.u-over');
    const legend = widget.querySelector('.u-legend');
    const c = canvas.getBoundingClientRect();
    const o = over.getBoundingClientRect();
    const l = legend.getBoundingClientRect();
    const w = widget.getBoundingClientRect();
    const scale = canvas.width / c.width;
    const left = Math.floor((o.left - c.left) * scale);
    const top = Math.floor((o.top - c.top) * scale);
    const rows = Math.floor(o.height * scale);
    let yLabels = 0;
    if (left > 0 && rows > 0) {
      const pixels = canvas.getContext('2d').getImageData(0, top, left, rows).data;
      let inked = false;
      for (let y = 0; y < rows; y++) {
        let ink = false;
        for (let x = 0; x < left && !ink; x++) ink = pixels[(y * left + x) * 4 + 3] > 0;
        if (ink && !inked) yLabels++;
        inked = ink;
      }
    }
    return {
      plot: o.height,
      canvas: c.height,
      yLabels,
      legendBelow: l.top - c.bottom,
      legendInside: l.bottom <= w.bottom + 0.5 && l.left >= w.left - 0.5 && l.right <= w.right + 0.5,
      legendScrolls: legend.scrollHeight > legend.clientHeight + 1,
      widgetScrolls: widget.scrollHeight > widget.clientHeight + 1,
    };
  })()`);
}

/**
 * Asserts that the header `banner` holds on its line the brand, `state` (whether the page is live) and,
 * on a phone, Menu: each shown within the header's box.
 */
export async function assertHeaderLine(banner: Locator, state: Locator): Promise<void> {
  const header = await banner.boundingBox();
  assert.ok(header, 'the header is shown');
  const parts = [
    ['the brand', banner.getByText('Thingbase', { exact: true })],
    ["the connection's state", state],
    ['Menu', banner.getByRole('button', { name: 'Menu', exact: true })],
  ] as const;
  for (const [what, part] of parts) {
    const box = await part.boundingBox();
    assert.ok(box, `${what} is shown`);
    assert.ok(box.y >= header.y && box.y + box.height <= header.y + header.height, `${what} is in the header`);
  }
}

const REALTIME = /\/api\/v3\/ws$/;

/** A page's realtime WebSockets, routed through the test (routeRealtime). */
export interface RealtimeRoute {
  /** The connections let through, oldest first. */
  sockets: WebSocketRoute[];
  /** How many connections the page tried to open. */
  attempts: number;
  /** Whether a new connection is let through; one that is not is closed at once (1011). */
  allow: boolean;
  /** Refuses new connections and closes the last one as a server restarting does (1012). */
  drop(): Promise<void>;
}

/** What the routing helpers need of a test: its end. */
interface Ending {
  after(fn: () => unknown): void;
}

/**
 * Routes the page's realtime connections opened from now on through the test, which can drop them and
 * refuse new ones, until the end of test `t`. (Playwright keeps a WebSocket route for the page's life,
 * `unrouteAll` leaves it: at the test's end this one lets every connection through untouched.)
 */
export async function routeRealtime(t: Ending, page: Page): Promise<RealtimeRoute> {
  let ended = false;
  const route: RealtimeRoute = {
    sockets: [],
    attempts: 0,
    allow: true,
    async drop() {
      route.allow = false;
      await route.sockets.at(-1)?.close({ code: 1012, reason: 'restarting' });
    },
  };
  t.after(() => {
    ended = true;
  });
  await page.routeWebSocket(REALTIME, (socket) => {
    if (ended) return socket.connectToServer();
    route.attempts++;
    if (!route.allow) return socket.close({ code: 1011, reason: 'down' });
    socket.connectToServer();
    route.sockets.push(socket);
  });
  return route;
}

/** Subscriptions held back by holdSubscriptions. */
export interface HeldSubscriptions {
  /** How many are held. */
  readonly count: number;
  /** Sends the held ones on, in the order the page sent them, and holds no more. */
  release(): void;
}

/**
 * Holds back the `subscribe` messages the page sends from now on that `hold` picks, until the test
 * releases them, or its end does.
 */
export async function holdSubscriptions(
  t: Ending,
  page: Page,
  hold: (subscription: { topic?: string }) => boolean,
): Promise<HeldSubscriptions> {
  let holding = true;
  const held: (() => void)[] = [];
  const release = () => {
    holding = false;
    for (const send of held.splice(0)) send();
  };
  t.after(release);
  await page.routeWebSocket(REALTIME, (socket) => {
    const server = socket.connectToServer();
    if (!holding) return;
    socket.onMessage((message) => {
      const sent = JSON.parse(String(message));
      if (holding && sent.type === 'subscribe' && hold(sent)) held.push(() => server.send(message));
      else server.send(message);
    });
  });
  return {
    get count() {
      return held.length;
    },
    release,
  };
}

/** A read held back by holdNextRead. */
export interface HeldRead {
  /** Settles once the server has answered the read (the page has not seen the answer). */
  readonly answered: Promise<void>;
  /** Lets the page have the answer. */
  release(): void;
}

/**
 * Holds the page's next request whose URL `picks` picks: the server answers it at once, and the page
 * gets that answer only when the test releases it, or its end does. So an answer made before a live
 * change can reach the page after the change was shown.
 */
export async function holdNextRead(t: Ending, page: Page, picks: (url: URL) => boolean): Promise<HeldRead> {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let answer = () => {};
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  let holding = true;
  t.after(async () => {
    release();
    await page.unroute(picks);
  });
  await page.route(picks, async (route) => {
    if (!holding) return route.continue();
    holding = false;
    const response = await route.fetch();
    answer();
    await held;
    await route.fulfill({ response });
  });
  return { answered, release };
}
