/**
 * A signed-in console page for browser tests of one area: a fresh browser context per user, opened at
 * a deep link and signed in there, with the page's problems (CSP refusals, uncaught errors) watched.
 */
import assert from 'node:assert/strict';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { screenshot, watchProblems } from './browser.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type TestServer } from './server.ts';

export interface ConsolePage {
  page: Page;
  problems: string[];
  close(): Promise<void>;
}

export async function signIn(page: Page, email = ADMIN_EMAIL, password = ADMIN_PASSWORD): Promise<void> {
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** Opens `/console/<path>` in a new context, signs in as the user and waits for the page's heading. */
export async function openConsole(
  browser: Browser,
  baseUrl: string,
  path: string,
  heading: string,
  user: { email: string; password: string } = { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
  /** The browser's settings beside its size: its time zone, say. */
  options: BrowserContextOptions = {},
): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  const problems = watchProblems(page);
  await page.goto(`${baseUrl}/console/${path}`);
  await signIn(page, user.email, user.password);
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  return { page, problems, close: () => context.close() };
}

/**
 * Opens a page as a user whose role may read but not change: once `shown` has found what it waits
 * for, no button whose name matches `writes` is offered, and the page reported no problem.
 */
export async function expectReadOnly(
  browser: Browser,
  baseUrl: string,
  where: { path: string; heading: string; screenshot: string },
  user: { email: string; password: string },
  shown: (page: Page) => Promise<unknown>,
  writes: RegExp,
): Promise<void> {
  const limited = await openConsole(browser, baseUrl, where.path, where.heading, user);
  try {
    await shown(limited.page);
    assert.equal(await limited.page.getByRole('button', { name: writes }).count(), 0, 'no write control offered');
    await screenshot(limited.page, where.screenshot);
    assert.deepEqual(limited.problems, []);
  } finally {
    await limited.close();
  }
}

/** Opens a page by URL as a user the API refuses `listPath` to: the page shows the API's own message. */
export async function expectRefusedByUrl(
  api: TestServer,
  browser: Browser,
  where: { path: string; heading: string; listPath: string },
  user: { email: string; password: string; token: string },
): Promise<void> {
  const refusal = await api.request('GET', where.listPath, { token: user.token });
  assert.equal(refusal.status, 403, refusal.text);
  const limited = await openConsole(browser, api.url, where.path, where.heading, user);
  try {
    await limited.page.getByRole('alert').filter({ hasText: refusal.body.message }).waitFor();
    assert.deepEqual(limited.problems, []);
  } finally {
    await limited.close();
  }
}
