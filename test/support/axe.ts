/**
 * Accessibility checks with axe-core in the browser tests (docs/console.md, "Tests"). The console's
 * Content-Security-Policy refuses the inline script playwright's addScriptTag would add, so axe is
 * evaluated through the DevTools protocol, which the policy does not govern.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string;
  help: string;
  nodes: string[];
}

/** The serious and critical violations axe-core finds on the page as it is now. */
export async function axeViolations(page: Page): Promise<Violation[]> {
  const session = await page.context().newCDPSession(page);
  try {
    const present = await session.send('Runtime.evaluate', { expression: 'typeof axe', returnByValue: true });
    if (present.result.value !== 'object') await session.send('Runtime.evaluate', { expression: AXE_SOURCE });
    const found = await session.send('Runtime.evaluate', {
      expression: `axe.run(document, { resultTypes: ['violations'] }).then((result) => JSON.stringify(
        result.violations
          .filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }))))`,
      awaitPromise: true,
      returnByValue: true,
    });
    if (found.exceptionDetails) throw new Error(`axe-core failed: ${found.exceptionDetails.text}`);
    return JSON.parse(found.result.value as string) as Violation[];
  } finally {
    await session.detach();
  }
}

/** Fails with axe-core's findings when the page has a serious or critical accessibility violation. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  const violations = await axeViolations(page);
  assert.deepEqual(violations, [], `${what}: ${JSON.stringify(violations, null, 2)}`);
}
