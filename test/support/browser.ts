/**
 * Browser tests drive Debian's Chromium (apt-get install chromium) with playwright-core against the
 * built console of a real server. Without Chromium, or without a built console, they skip with a
 * reason, except under CI=true, where that is a failure (as PostgreSQL's suites do, stores.ts).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
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
