/**
 * The interactive API reference at /docs (docs/api.md) under its own Content-Security-Policy: it
 * shares the console's origin, so it may not be framed, nor run scripts other than its own, and it
 * still draws every endpoint without a refusal.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, launchBrowser, screenshot, watchProblems } from '../support/browser.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const sqlite = STORES[0]!;

describe('the API reference at /docs', { skip: browserSkip }, () => {
  let api: TestServer;
  let browser: Browser;
  before(async () => {
    [api, browser] = await Promise.all([startServer(sqlite), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it('when /docs is opened then it draws the endpoints under a policy that forbids framing and other scripts', async () => {
    const page = await browser.newPage();
    const problems = watchProblems(page);
    const answer = await page.goto(`${api.url}/docs/`);
    const policy = answer?.headers()['content-security-policy'] ?? '';
    assert.match(policy, /frame-ancestors 'none'/);
    assert.match(policy, /script-src 'self'/);
    assert.doesNotMatch(policy, /upgrade-insecure-requests/, 'the server may run without TLS');
    assert.equal(answer?.headers()['x-content-type-options'], 'nosniff');
    await page.getByText('/api/v3/things', { exact: true }).first().waitFor();
    await screenshot(page, 'api-docs');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
