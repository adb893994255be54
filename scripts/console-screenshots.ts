/**
 * `npm run console:screenshots`: the pictures of docs/console.md. Starts a server of this checkout on a
 * fresh SQLite file, fills it with a plausible plant (templates with metrics, things sending events
 * over the last hour, groups, a gateway, rules with alerts, notification actions with delivery
 * attempts, users, a role, an API key, a child organisation), signs in in Chromium and saves one JPEG
 * per page into docs/images/ (1280 x 800, quality 70, less where that is over 100 KB). Run `npm run console:build` first.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { createServer } from '../src/app.ts';
import { loadConfig } from '../src/core/config.ts';
import { launchBrowser } from '../test/support/browser.ts';
import { Device } from '../test/support/device.ts';

const EMAIL = 'operator@example.com';
const PASSWORD = 'screenshot password';
const IMAGES = fileURLToPath(new URL('../docs/images/', import.meta.url));

/** The pages pictured: file name, path under /console/, what shows the page is ready. */
const PAGES: [string, string, string][] = [
  ['overview', 'overview', 'Overview'],
  ['things', 'things', 'Things'],
  ['thing', 'things/boiler-1', 'Boiler 1'],
  ['templates', 'templates', 'Templates'],
  ['groups', 'groups', 'Groups'],
  ['gateways', 'gateways', 'Gateways'],
  ['alerts', 'alerts', 'Alerts'],
  ['audit-trail', 'audit-trail', 'Audit trail'],
  ['rules', 'rules', 'Rules'],
  ['notification-actions', 'notification-actions', 'Notification actions'],
  ['key-pairs', 'key-pairs', 'Key pairs'],
  ['api-keys', 'api-keys', 'API keys'],
  ['users', 'users', 'Users'],
  ['roles', 'roles', 'Roles'],
  ['organisations', 'organisations', 'Organisations'],
  ['settings', 'settings', 'Settings'],
];

async function main(): Promise<void> {
  // A peer for the HTTP actions: it takes a delivery, so the attempts show a success.
  const peer = createHttpServer((_, answer) => answer.writeHead(200).end('ok'));
  await new Promise<void>((done) => peer.listen(0, '127.0.0.1', done));
  const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  const server = await createServer(
    loadConfig({
      DATABASE_URL: `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-shots-')), 'shots.db')}`,
      THINGBASE_ADMIN_EMAIL: EMAIL,
      THINGBASE_ADMIN_PASSWORD: PASSWORD,
      THINGBASE_PASSWORD_HASH_COST: '1024',
      // The e-mail action's attempts fail (no SMTP_URL), as they would on a server without mail.
      LOG_LEVEL: 'error',
      MQTT_PORT: '0',
      // The HTTP action's peer is on this machine.
      ALLOW_PRIVATE_WEBHOOKS: 'true',
    }),
  );
  const url = await server.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launchBrowser();
  try {
    await fill(url, peerUrl);
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(`${url}/console/`);
    await page.getByLabel('Email', { exact: true }).fill(EMAIL);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    for (const [file, path, heading] of PAGES) {
      await page.goto(`${url}/console/${path}`);
      await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
      await page.waitForLoadState('networkidle');
      // Charts draw on the next frames; counts come after the rows.
      await page.waitForTimeout(500);
      const target = join(IMAGES, `console-${file}.jpg`);
      // Quality 70, less for a busy page, to stay under 100 KB.
      let quality = 70;
      await page.screenshot({ path: target, type: 'jpeg', quality });
      while (statSync(target).size > 100 * 1024 && quality > 40) {
        quality -= 10;
        await page.screenshot({ path: target, type: 'jpeg', quality });
      }
      console.log(`${target}: ${(statSync(target).size / 1024).toFixed(0)} KB, quality ${quality}`);
    }
  } finally {
    await browser.close();
    await server.close();
    peer.close();
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the answers of many endpoints, read by field
async function call(url: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const answer = await request(`${url}${path}`, {
    method: method as 'GET',
    headers: { 'content-type': 'application/json', 'x-auth-token': token },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`${method} ${path}: ${answer.statusCode} ${text}`);
  return text ? JSON.parse(text) : {};
}

/** A reading as a sensor sends it, to `digits` decimals. */
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/** The plant the pictures show. */
async function fill(url: string, peerUrl: string): Promise<void> {
  const signIn = await request(`${url}/api_sign_in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  const { auth_token: token } = (await signIn.body.json()) as { auth_token: string };
  const post = (path: string, body: unknown) => call(url, token, 'POST', path, body);

  const template = async (name: string, description: string, metrics: [string, string][]) =>
    (
      await post('/api/v3/thing_templates', {
        thing_template: {
          name,
          description,
          heartbeat_interval: 60,
          metrics: metrics.map(([metric, unit]) => ({ name: metric, data_type: 'number', unit })),
        },
      })
    ).thing_template.thing_template_key as string;
  const boiler = await template('Boiler', 'Gas boilers of the plant rooms', [
    ['temperature', '°C'],
    ['pressure', 'bar'],
  ]);
  const pump = await template('Pump', 'Circulation pumps', [
    ['flow', 'l/min'],
    ['vibration', 'mm/s'],
  ]);
  const cold = await template('Cold room', 'Refrigerated stores', [['temperature', '°C']]);

  const things: { key: string; name: string; template: string; tags: string[]; values: (i: number) => object }[] = [];
  for (let n = 1; n <= 4; n++) {
    things.push({
      key: `boiler-${n}`,
      name: `Boiler ${n}`,
      template: boiler,
      tags: ['hall-a', 'heating'],
      values: (i) => ({
        temperature: round(72 + 6 * Math.sin(i / 9 + n) + n, 1),
        pressure: round(1.6 + 0.1 * Math.cos(i / 7), 2),
      }),
    });
  }
  for (let n = 1; n <= 6; n++) {
    things.push({
      key: `pump-${n}`,
      name: `Pump ${n}`,
      template: pump,
      tags: [n <= 3 ? 'hall-a' : 'hall-b'],
      values: (i) => ({
        flow: round(120 + 15 * Math.sin(i / 11 + n), 0),
        vibration: round(2 + Math.abs(Math.sin(i / 5)), 1),
      }),
    });
  }
  for (let n = 1; n <= 3; n++) {
    things.push({
      key: `cold-room-${n}`,
      name: `Cold room ${n}`,
      template: cold,
      tags: ['hall-b', 'food'],
      values: (i) => ({ temperature: round(3 + Math.sin(i / 13 + n), 1) }),
    });
  }
  for (const thing of things) {
    await post('/api/v3/things', {
      thing: {
        thing_key: thing.key,
        name: thing.name,
        thing_template_key: thing.template,
        tags: thing.tags,
        description: `${thing.name}, ${thing.tags[0] === 'hall-a' ? 'hall A' : 'hall B'}`,
      },
    });
  }

  const overheating = (
    await post('/api/v3/rules', {
      rule: {
        name: 'Boiler overheating',
        condition: 'temperature > 80',
        thing_template_key: boiler,
        alert_type: 2,
        alert_message: 'Boiler above 80 °C',
      },
    })
  ).rule.rule_key as string;
  await post('/api/v3/rules', {
    rule: { name: 'Pump vibration', condition: 'vibration > 2.9', alert_type: 1, alert_message: 'Pump vibrating' },
  });
  await post('/api/v3/notification_actions', {
    notification_action: {
      type: 'CallHttpUrlAction',
      rule_key: overheating,
      method: 'POST',
      url: `${peerUrl}/maintenance/$THING$`,
    },
  });
  await post('/api/v3/notification_actions', {
    notification_action: {
      type: 'EmailNotificationAction',
      rule_key: overheating,
      to: 'maintenance@example.com',
      subject: 'Boiler overheating',
    },
  });

  // An hour of events a minute apart, the last one now.
  const { key_pair: pair } = await post('/api/v3/key_pairs', { key_pair: { name: 'Plant devices' } });
  await post('/api/v3/key_pairs', { key_pair: { name: 'Test bench' } });
  const device = new Device(url, pair);
  const now = Date.now();
  for (const thing of things) {
    const events = Array.from({ length: 60 }, (_, i) => ({
      thing_key: thing.key,
      timestamp: now - (59 - i) * 60_000,
      data: thing.values(i),
    }));
    const sent = await device.event({ events });
    if (sent.status !== 200) throw new Error(`events of ${thing.key}: ${sent.status} ${sent.text}`);
  }

  await post('/api/v3/groups', {
    group: {
      name: 'Hall A',
      description: 'Everything in hall A',
      group_type: 2,
      thing_expression: "tags contains 'hall-a'",
    },
  });
  await post('/api/v3/groups', {
    group: { name: 'Food safety', group_type: 2, thing_expression: "tags contains 'food'" },
  });
  await post('/api/v3/groups', {
    group: { name: 'Night shift rounds', group_type: 1, thing_keys: ['boiler-1', 'pump-4', 'cold-room-2'] },
  });
  await post('/api/v3/gateway', {
    gateway: {
      name: 'Hall A gateway',
      gateway_type: 'modbus',
      gateway_version: '1.2.0',
      tags: 'hall-a',
      adapters: [
        { type: 'modbus-tcp', configuration: '{"host": "10.0.0.5", "port": 502}', enabled: true },
        { type: 'serial', configuration: '{"device": "/dev/ttyS0", "baud": 9600}', enabled: false },
      ],
    },
  });

  const { role } = await post('/api/v3/roles', {
    role: { name: 'Operator', abilities: [11, 21, 31, 51, 91, 93, 121] },
  });
  await post('/api/v3/users', {
    user: {
      email: 'amira@example.com',
      name: 'Amira Haddad',
      password: 'a long enough password',
      role_key: role.role_key,
    },
  });
  await post('/api/v3/users', {
    user: {
      email: 'jonas@example.com',
      name: 'Jonas Berg',
      password: 'a long enough password',
      role_key: role.role_key,
    },
  });
  await post('/api/v3/api_keys', { api_key: { name: 'Reporting script', role_key: role.role_key } });
  await post('/api/v3/organisations', { organisation: { name: 'Northwind Dairy', is_oem: false } });
}

await main();
