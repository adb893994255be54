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
  /** The navigation link pressed; a thing's page is opened from the things table instead. */
  link: string;
  /** How the page is reached when it is not a link of the navigation, and the section it is reached from. */
  open?: (page: Page) => Promise<unknown>;
  from?: string;
  /** Resolves once the page shows its content. */
  shown: (page: Page) => Promise<unknown>;
  /**
   * The API calls the page makes, in waves: each wave's calls at once, a wave after the one before it
   * (the actions of a rule follow the list of rules). A call is a GET path with its query, or a POST.
   */
  calls: (known: Known) => Call[][];
}

type Call = string | { post: string; body: unknown };

/** What the calls need to know of the stored data. */
interface Known {
  organisationKey: string;
  /** The first page of groups, by name, as the Groups page lists them. */
  groupKeys: string[];
  /** The first rule by name, which the Notification actions page shows. */
  ruleKey: string;
  /** The events of the thing whose page is opened (all of the last hour). */
  thingEvents: number;
}

const CASES: PageCase[] = [
  {
    link: 'Overview',
    shown: (page) =>
      page.getByRole('figure', { name: 'Open alerts', exact: true }).filter({ hasText: /^\d+$/ }).waitFor(),
    calls: () => [['/api/v3/fleet_summary', '/api/v3/alerts?status=open&per=5&order_by=timestamp&order=desc']],
  },
  {
    link: 'Things',
    shown: (page) => page.locator('tbody tr td a').first().waitFor(),
    calls: () => [['/api/v3/things?page=1&per=50&order_by=name&order=asc']],
  },
  {
    link: 'Templates',
    shown: (page) => page.getByRole('table', { name: 'Templates' }).locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/thing_templates?page=1&per=50&order_by=name&order=asc']],
  },
  {
    link: 'Groups',
    // Every row's member count, not only the first row (one request for the page's groups).
    shown: (page) =>
      page.waitForFunction(() => {
        const cells = [
          ...(globalThis as any).document.querySelectorAll('table[aria-label="Groups"] tbody td:nth-child(3)'),
        ];
        return cells.length > 0 && cells.every((cell: any) => /^\d+$/.test(cell.textContent));
      }),
    calls: ({ groupKeys }) => [
      ['/api/v3/groups?page=1&per=50&order_by=name&order=asc'],
      [`/api/v3/group_member_counts?group_keys=${groupKeys.join(',')}`],
    ],
  },
  {
    link: 'Gateways',
    shown: (page) => page.getByRole('table', { name: 'Gateways' }).locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/gateway?page=1&per=50&order_by=name&order=asc']],
  },
  {
    // Its link in the things table, the chart of its last hour drawn.
    link: 'a thing (its chart of the last hour)',
    from: 'Things',
    open: (page) => page.getByRole('link', { name: 'Hot pump', exact: true }).click(),
    shown: (page) =>
      page
        .locator('.chart-caption')
        .filter({ hasText: /^\d+ (points|buckets)/ })
        .waitFor(),
    // The count first (a page of one), then one page of events or, past 10,000, averages per minute.
    calls: ({ thingEvents }) => {
      const to = Math.floor(Date.now() / 1000);
      const from = to - 3600;
      const events = (per: number) => ({
        post: '/api/v3/query/thing_data',
        body: { thing_key: 'hot-1', from, to, page: 1, per, order: 'asc', data_format: 'array' },
      });
      const averages = {
        post: '/api/v3/query/thing_aggregated_data',
        body: { thing_keys: ['hot-1'], from, to, time_grouping: 'minute', time_grouping_value: 1, functions: ['avg'] },
      };
      return [
        [
          '/api/v3/things/hot-1',
          '/api/v3/alerts?thing_key=hot-1&per=20',
          { post: '/api/v3/query/thing_data', body: { thing_key: 'hot-1', from, to, per: 1000, order: 'desc' } },
          events(1),
        ],
        [thingEvents > 10_000 ? averages : events(10_000)],
      ];
    },
  },
  {
    link: 'Alerts',
    shown: (page) => page.locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/alerts?page=1&per=50&order=desc']],
  },
  {
    link: 'Audit trail',
    shown: (page) => page.locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/audit_trails?page=1&per=50']],
  },
  {
    link: 'Rules',
    shown: (page) => page.getByRole('table', { name: 'Rules' }).locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/rules?per=1000&order_by=name&order=asc']],
  },
  {
    link: 'Notification actions',
    shown: (page) => page.getByRole('table', { name: 'Notification actions' }).locator('tbody tr').first().waitFor(),
    calls: ({ ruleKey }) => [
      ['/api/v3/rules?per=1000&order_by=name&order=asc'],
      [`/api/v3/notification_actions?rule_key=${ruleKey}&per=1000`],
    ],
  },
  {
    link: 'Key pairs',
    shown: (page) => page.getByRole('table', { name: 'Key pairs' }).locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/key_pairs?per=1000&order_by=created_at&order=desc']],
  },
  {
    link: 'Users',
    shown: (page) => page.getByRole('table', { name: 'Users' }).locator('tbody tr').first().waitFor(),
    calls: () => [
      ['/api/v3/users?page=1&per=50&order_by=email&order=asc', '/api/v3/roles?per=1000&order_by=name&order=asc'],
    ],
  },
  {
    link: 'Roles',
    shown: (page) => page.getByRole('table', { name: 'Roles' }).locator('tbody tr').first().waitFor(),
    calls: () => [['/api/v3/roles?per=1000&order_by=name&order=asc']],
  },
  {
    link: 'API keys',
    shown: (page) => page.getByRole('table', { name: 'API keys' }).waitFor(),
    calls: () => [
      ['/api/v3/api_keys?per=1000&order_by=created_at&order=desc', '/api/v3/roles?per=1000&order_by=name&order=asc'],
    ],
  },
  {
    link: 'Organisations',
    shown: (page) => page.getByRole('button', { name: 'New organisation', exact: true }).waitFor(),
    calls: () => [['/api/v3/organisations?per=1000&order_by=name&order=asc']],
  },
  {
    link: 'Settings',
    shown: (page) => page.getByRole('figure', { name: 'Storage', exact: true }).filter({ hasText: /\d/ }).waitFor(),
    calls: ({ organisationKey }) => [['/api/v3/usage', `/api/v3/organisations/${organisationKey}`]],
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

/**
 * Adds `groups` groups and `alerts` alerts (one rule, every event of a device raising one), and one
 * template, gateway and notification action (on a rule of its own, first by name) for their tables.
 */
export async function seedPages(url: string, token: string, groups: number, alerts: number): Promise<void> {
  await post(url, token, '/api/v3/thing_templates', {
    thing_template: { name: 'Pump', metrics: [{ name: 'temperature', data_type: 'number', unit: '°C' }] },
  });
  await post(url, token, '/api/v3/gateway', { gateway: { name: 'Hall gateway', gateway_type: 'modbus' } });
  const { rule: cold } = await post(url, token, '/api/v3/rules', {
    rule: { name: 'Cold', condition: 'temperature < -40', alert_type: 1, alert_message: 'Cold' },
  });
  await post(url, token, '/api/v3/notification_actions', {
    notification_action: {
      type: 'CallHttpUrlAction',
      rule_key: cold.rule_key,
      method: 'POST',
      url: 'http://127.0.0.1:9/',
    },
  });
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
  thingEvents: number,
) {
  const signIn = await request(`${url}/api_sign_in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(credentials),
  });
  const session = (await signIn.body.json()) as { auth_token: string; organisation: { organisation_key: string } };
  const token = session.auth_token;
  const get = async (path: string) => {
    const answer = await request(`${url}${path}`, { headers: { 'x-auth-token': token } });
    return (await answer.body.json()) as any;
  };
  const known: Known = {
    organisationKey: session.organisation.organisation_key,
    groupKeys: (await get('/api/v3/groups?page=1&per=50&order_by=name&order=asc')).groups.map(
      (g: { group_key: string }) => g.group_key,
    ),
    ruleKey: (await get('/api/v3/rules?per=1000&order_by=name&order=asc')).rules[0].rule_key,
    thingEvents,
  };
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
      for (const wave of pageCase.calls(known)) {
        await Promise.all(
          wave.map(async (call) => {
            const answer =
              typeof call === 'string'
                ? await request(`${url}${call}`, { headers: { 'x-auth-token': token } })
                : await request(`${url}${call.post}`, {
                    method: 'POST',
                    headers: { 'content-type': 'application/json', 'x-auth-token': token },
                    body: JSON.stringify(call.body),
                  });
            if (answer.statusCode !== 200) throw new Error(`${JSON.stringify(call)}: ${answer.statusCode}`);
            await answer.body.json();
          }),
        );
      }
      api.push(performance.now() - began);
      // From another section, so that the page is made anew.
      const other = pageCase.from ?? (pageCase.link === 'Settings' ? 'Roles' : 'Settings');
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: other, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: other, exact: true }).waitFor();
      if (pageCase.from === 'Things') await page.locator('tbody tr td a').first().waitFor();
      await page.waitForLoadState('networkidle');
      const clicked = performance.now();
      if (pageCase.open) await pageCase.open(page);
      else
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
