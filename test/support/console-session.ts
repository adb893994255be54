/**
 * A signed-in console page for browser tests of one area: a fresh browser context per user, opened at
 * a deep link and signed in there, with the page's problems (CSP refusals, uncaught errors) watched.
 */
import type { Browser, Page } from 'playwright-core';
import { watchProblems } from './browser.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './server.ts';

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
): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const problems = watchProblems(page);
  await page.goto(`${baseUrl}/console/${path}`);
  await signIn(page, user.email, user.password);
  await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  return { page, problems, close: () => context.close() };
}
