/**
 * Part of `npm run bench -- console`: each console page's time to show its content after its link is
 * pressed, next to the time of the API calls that page makes, made from Node at once as the page makes
 * them (docs/console.md, "Performance"). The organisation holds `--groups` groups and `--alerts` alerts
 * (raised by a rule from events a device sends) besides the benchmark's things.
 */
import type { Browser, Page } from 'playwright-core';
import { request } from 'undici';
import { Device } from '../test/support/device.ts';
import { median, table } from './support.ts';

interface PageCase {
  link: string;
  /** Resolves once the page shows its content. */
  shown: (page: Page) => Promise<unknown>;
  /** The API calls the page makes (GET paths with their query). */
  calls: (organisationKey: string) => string[];
}

const CASES: PageCase[] = [
  {
    link: 'Overview',
    shown: (page) =>
      page.getByRole('figure', { name: 'Open alerts', exact: true }).filter({ hasText: /^\d+$/ }).waitFor(),
    calls: () => ['/api/v3/fleet_summary', '/api/v3/alerts?status=open&per=5&order_by=timestamp&order=desc'],
  },
  {
    link: 'Things',
    shown: (page) => page.locator('tbody tr td a').first().waitFor(),
    calls: () => ['/api/v3/things?page=1&per=50&order_by=name&order=asc'],
  },
  {
    link: 'Alerts',
    shown: (page) => page.locator('tbody tr').first().waitFor(),
    calls: () => ['/api/v3/alerts?page=1&per=50&order=desc'],
  },
  {
    link: 'Audit trail',
    shown: (page) => page.locator('tbody tr').first().waitFor(),
    calls: () => ['/api/v3/audit_trails?page=1&per=50'],
  },
  {
    link: 'Users',
    shown: (page) => page.getByRole('table', { name: 'Users' }).locator('tbody tr').first().waitFor(),
    calls: () => [
      '/api/v3/users?page=1&per=50&order_by=email&order=asc',
      '/api/v3/roles?per=1000&order_by=name&order=asc',
    ],
  },
  {
    link: 'Roles',
    shown: (page) => page.getByRole('table', { name: 'Roles' }).locator('tbody tr').first().waitFor(),
    calls: () => ['/api/v3/roles?per=1000&order_by=name&order=asc'],
  },
  {
    link: 'API keys',
    shown: (page) => page.getByRole('table', { name: 'API keys' }).waitFor(),
    calls: () => [
      '/api/v3/api_keys?per=1000&order_by=created_at&order=desc',
      '/api/v3/roles?per=1000&order_by=name&order=asc',
    ],
  },
  {
    link: 'Organisations',
    shown: (page) => page.getByRole('button', { name: 'New organisation', exact: true }).waitFor(),
    calls: () => ['/api/v3/organisations?per=1000&order_by=name&order=asc'],
  },
  {
    link: 'Settings',
    shown: (page) => page.getByRole('figure', { name: 'Storage', exact: true }).filter({ hasText: /\d/ }).waitFor(),
    calls: (organisationKey) => ['/api/v3/usage', `/api/v3/organisations/${organisationKey}`],
  },
];

async function post(url: string, token: string, path: string, body: unknown): Promise<any> {
  const answer = await request(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-auth-token': token },
    body: JSON.stringify(body),
  });
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`${path}: ${answer.statusCode} ${text}`);
  return JSON.parse(text);
}

/** Adds `groups` groups and `alerts` alerts (one rule, every event of a device raising one). */
export async function seedPages(url: string, token: string, groups: number, alerts: number): Promise<void> {
  for (let i = 0; i < groups; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, groups - i) }, (_, j) =>
        post(url, token, '/api/v3/groups', {
          group: { name: `Line ${i + j}`, group_type: 2, thing_expression: `tags contains 'line-${(i + j) % 20}'` },
        }),
      ),
    );
  }
  await post(url, token, '/api/v3/rules', {
    rule: { name: 'Hot', condition: 'temperature > 40', alert_type: 2, alert_message: 'Hot', trigger: 'every_event' },
  });
  const { key_pair: pair } = await post(url, token, '/api/v3/key_pairs', { key_pair: { name: 'alerts' } });
  const device = new Device(url, pair);
  await device.register({ thing_key: 'hot-1', name: 'Hot pump' });
  const start = Date.now() - alerts * 10;
  for (let i = 0; i < alerts; i += 1000) {
    const events = Array.from({ length: Math.min(1000, alerts - i) }, (_, j) => ({
      thing_key: 'hot-1',
      timestamp: start + (i + j) * 10,
      data: { temperature: 50 },
    }));
    const sent = await device.event({ events });
    if (sent.status !== 200) throw new Error(`events: ${sent.status} ${sent.text}`);
  }
}

/** Each page's time from its link to its content, beside its API calls' time; median of `rounds`. */
export async function pageTimes(
  browser: Browser,
  url: string,
  credentials: { email: string; password: string },
  rounds: number,
) {
  const signIn = await request(`${url}/api_sign_in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(credentials),
  });
  const session = (await signIn.body.json()) as { auth_token: string; organisation: { organisation_key: string } };
  const token = session.auth_token;
  const organisationKey = session.organisation.organisation_key;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  await page.goto(`${url}/console/settings`);
  await page.getByLabel('Email', { exact: true }).fill(credentials.email);
  await page.getByLabel('Password', { exact: true }).fill(credentials.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Settings', exact: true }).waitFor();
  const rows: (string | number)[][] = [['page', 'API calls ms', 'page ms', 'vs baseline']];
  for (const pageCase of CASES) {
    const api: number[] = [];
    const shown: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const began = performance.now();
      await Promise.all(
        pageCase.calls(organisationKey).map(async (path) => {
          const answer = await request(`${url}${path}`, { headers: { 'x-auth-token': token } });
          await answer.body.json();
        }),
      );
      api.push(performance.now() - began);
      // From another section, so that the page is made anew.
      const other = pageCase.link === 'Settings' ? 'Roles' : 'Settings';
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: other, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: other, exact: true }).waitFor();
      await page.waitForLoadState('networkidle');
      const clicked = performance.now();
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: pageCase.link, exact: true })
        .click();
      await pageCase.shown(page);
      shown.push(performance.now() - clicked);
    }
    const apiMs = median(api);
    const pageMs = median(shown);
    rows.push([pageCase.link, apiMs.toFixed(0), pageMs.toFixed(0), `${(pageMs / Math.max(apiMs, 1)).toFixed(2)}x`]);
  }
  await context.close();
  return table(rows);
}
