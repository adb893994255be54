/**
 * The `thingbase` command (docs/configuration.md, "Command line"): `serve` (the default) starts the
 * server; `migrate`, `admin create`, `admin reset-password`, `rotate-secret-key`, `backup` and `copy-store`
 * work on the store; `import things` and `export events` on a running server (commands/).
 * Every command is configured by the same environment variables as the server.
 */
import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import type { Server } from './app.ts';
import { bootstrapFirstAdmin } from './bootstrap.ts';
import { addOperationsCommands } from './commands/commands.ts';
import { addCopyStoreCommand } from './commands/copy-store.ts';
import { addSimulateCommand } from './commands/simulate.ts';
import { type Config, loadConfig } from './core/config.ts';
import { chooseLogFormat } from './core/log-format.ts';
import { rotateSecretKey } from './keypairs/secret-key.ts';
import { openConfiguredStore, redactUrl } from './startup.ts';
import type { Store } from './store/store.ts';
import { LATEST_MIGRATION } from './store/store.ts';
import { COMMAND_LINE, checkNewAdmin, createAccountAdmin, resetPassword } from './users/admin.ts';
import { countUsers } from './users/service.ts';
import { VERSION } from './version.ts';

const print = (lines: string[]) => process.stdout.write(`${lines.join('\n')}\n`);

export async function main(argv: string[]): Promise<void> {
  const program = new Command('thingbase')
    .description('Thingbase IoT platform server, configured by environment variables (docs/configuration.md)')
    .version(VERSION, '-v, --version', 'print the version')
    .showHelpAfterError()
    .allowExcessArguments(false);

  program.command('serve').description('start the server (the default command)').action(serve);

  program
    .command('migrate')
    .description('bring the database schema up to date, then exit')
    .action(async () => {
      const applied: string[] = [];
      const store = await openConfiguredStore(loadConfig(), (names) => applied.push(...names));
      await store.close();
      print([
        applied.length === 0
          ? `The database schema is up to date (${LATEST_MIGRATION}).`
          : `Applied ${applied.length} migration(s): ${applied.join(', ')}. The schema is at ${LATEST_MIGRATION}.`,
      ]);
    });

  const admin = program.command('admin').description("manage the first organisation's account admins");
  admin
    .command('create')
    .description('create an account admin of the first organisation; prints its password when generated')
    .requiredOption('--email <email>', "the admin's e-mail address")
    .option('--password <password>', 'its password (8 to 256 characters); generated and printed when omitted')
    .action(async (options: { email: string; password?: string }) => {
      const config = loadConfig();
      checkNewAdmin(options.email, options.password);
      await withStore(config, async (store) => {
        if ((await countUsers(store.db)) === 0) {
          // An empty store: this admin is the first one, made as the first start would.
          const first = await bootstrapFirstAdmin(store, {
            ...config,
            adminEmail: options.email,
            adminPassword: options.password,
            actor: COMMAND_LINE,
          });
          if (first) {
            print([
              `Created the first organisation ${config.orgName} and its account admin ${first.email}.`,
              ...passwordLines(first.generatedPassword),
            ]);
            return;
          }
        }
        const created = await createAccountAdmin(store, {
          email: options.email,
          password: options.password,
          passwordHashCost: config.passwordHashCost,
        });
        print([
          `Created the account admin ${created.email} of the organisation ${created.organisationName}.`,
          ...passwordLines(created.generatedPassword),
        ]);
      });
    });
  admin
    .command('reset-password')
    .description('give a user a new random password and end its sessions; prints the password as the last line')
    .requiredOption('--email <email>', "the user's e-mail address")
    .action(async (options: { email: string }) => {
      const config = loadConfig();
      await withStore(config, async (store) => {
        const password = await resetPassword(store, {
          email: options.email,
          passwordHashCost: config.passwordHashCost,
        });
        print([`New password of ${options.email.trim().toLowerCase()} (its sessions have ended):`, password]);
      });
    });

  program
    .command('rotate-secret-key')
    .description(
      "re-seal the stored secrets (key pairs' secret keys, notification actions' credentials) under " +
        'THINGBASE_SECRET_KEY (stop every server first); ' +
        'the old key is --old-key, THINGBASE_OLD_SECRET_KEY, or else the key generated and kept in the database',
    )
    .option('--old-key <key>', 'the key the secrets are sealed under now (THINGBASE_OLD_SECRET_KEY)')
    .action(async (options: { oldKey?: string }) => {
      const config = loadConfig();
      const oldKey = options.oldKey || process.env.THINGBASE_OLD_SECRET_KEY || undefined;
      await withStore(config, async (store) => {
        const result = await rotateSecretKey(store, { oldKey, newKey: config.secretKey });
        const key = config.secretKey ? 'THINGBASE_SECRET_KEY' : 'the key generated and kept in the database';
        print([
          `Re-sealed ${result.resealed} secret(s) under ${key}` +
            (result.unchanged > 0 ? `; ${result.unchanged} already were.` : '.'),
        ]);
      });
    });

  addOperationsCommands(program);
  addCopyStoreCommand(program);
  addSimulateCommand(program);

  // No command is `serve`; an unknown one is an error, not arguments of `serve`.
  await program.parseAsync(argv.length === 0 ? ['serve'] : argv, { from: 'user' });
}

function passwordLines(password: string | undefined): string[] {
  return password ? ['Its password, shown only this once:', password] : [];
}

async function withStore(config: Config, work: (store: Store) => Promise<void>): Promise<void> {
  const store = await openConfiguredStore(config);
  try {
    await work(store);
  } finally {
    await store.close();
  }
}

/** How long a stop may take in all before the process exits anyway (ms). */
const STOP_DEADLINE_MS = 25_000;

async function serve(): Promise<void> {
  const config = loadConfig();
  // Loaded only to serve, so that the other commands start quickly.
  const { createServer } = await import('./app.ts');
  // With TLS, SIGHUP reads the certificate and key again (docs/configuration.md, "TLS"). Without, it
  // must not end the process (Node's default: a service manager counts that as a clean exit and does
  // not restart it). One sent while the server starts (the store opening, migrations, a broker's first
  // connection) is only noted: the start reads those files itself.
  let started: Server | undefined;
  process.on('SIGHUP', () => {
    if (!started) return void process.stderr.write('SIGHUP while starting: nothing to reload yet\n');
    if (started.config.tls) void started.reloadTls();
    else started.app.log.info('SIGHUP: nothing to reload (no TLS_CERT_FILE)');
  });
  const server = await createServer(config);
  started = server;
  const waitingFor = () => {
    const pending = server.stopPending();
    return pending.length > 0 ? `waiting for ${pending.join(', ')}` : 'between steps';
  };
  // Signals are handled before the server listens: one sent as soon as it answers must find them.
  let closing = false;
  const shutdown = (signal: string) => {
    // A second signal is an operator who will not wait: the process ends now.
    if (closing) {
      server.app.log.warn(`${signal} received again: exiting without finishing the stop (${waitingFor()})`);
      process.exit(1);
    }
    closing = true;
    server.app.log.info(`${signal} received, shutting down`);
    // Each step of the stop is bounded (app.ts); this is the bound of the whole, within systemd's
    // TimeoutStopSec=30 (docs/deployment.md, "Stopping").
    setTimeout(() => {
      server.app.log.error(`the stop did not finish within ${STOP_DEADLINE_MS / 1000} s (${waitingFor()}): exiting`);
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    server.close().then(
      () => process.exit(0),
      (error) => {
        server.app.log.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  let address: string;
  try {
    address = await server.listen();
  } catch (error) {
    await server.close().catch(() => {});
    throw error;
  }
  // Off a terminal the log is JSON lines (docs/configuration.md, LOG_FORMAT): the message is one more,
  // written whatever LOG_LEVEL says, as the lines on a terminal are.
  const items = startItems(server, address);
  if (chooseLogFormat(server.config.logFormat, process.stdout.isTTY === true) === 'json') {
    process.stdout.write(`${startLogLine(items, address)}\n`);
  } else print(startMessage(items, address));
}

/** The start message as a JSON log line at level info, in the form of the server's other lines. */
function startLogLine(items: StartItem[], address: string): string {
  const fields: Record<string, string> = {};
  for (const { field, text } of items) fields[field] = fields[field] ? `${fields[field]}; ${text}` : text;
  return JSON.stringify({
    level: 30,
    time: Date.now(),
    pid: process.pid,
    hostname: hostname(),
    ...fields,
    msg: listeningLine(address),
  });
}

/** One thing the start message says: its label on a terminal, its field in a JSON log line. */
export interface StartItem {
  label: string;
  field: string;
  text: string;
}

const listeningLine = (address: string) => `Thingbase ${VERSION} is listening on ${address}`;

/** The start message as lines: each item under its label, and last where it listens. */
export function startMessage(items: StartItem[], address: string): string[] {
  return [...items.map((item) => `${`${item.label}:`.padEnd(11)}${item.text}`), listeningLine(address)];
}

/**
 * What a person starting the server needs, the console first (docs/configuration.md, "Starting"); the
 * message ends with where it listens, which scripts wait for.
 */
export function startItems(
  server: Pick<Server, 'config' | 'bootstrap' | 'mqttPort' | 'mqttsPort'>,
  address: string,
): StartItem[] {
  const { config, bootstrap } = server;
  // PORT=0 lets the system choose the port: name the one it chose.
  const url = new URL(config.publicBaseUrl);
  if (url.port === '0') url.port = new URL(address).port;
  const base = url.href.replace(/\/+$/, '');
  const items: StartItem[] = [
    { label: 'Console', field: 'console', text: `${base}/` },
    { label: 'API docs', field: 'api_docs', text: `${base}/docs` },
  ];
  const ports = [
    server.mqttPort !== undefined ? `port ${server.mqttPort}` : undefined,
    server.mqttsPort !== undefined ? `MQTTS (TLS) on port ${server.mqttsPort}` : undefined,
  ].filter((part) => part !== undefined);
  const mqtt = [
    ports.length > 0 ? `${ports.join(', ')}, for devices` : undefined,
    config.mqttUrl ? `devices through the broker at ${redactUrl(config.mqttUrl)}` : undefined,
    // Without a listener of its own, the device endpoint is reached over WebSocket only.
    ports.length === 0 && !config.mqttUrl
      ? `${base.replace(/^http/, 'ws')}/mqtt (over WebSocket), for devices`
      : undefined,
  ];
  for (const text of mqtt) if (text) items.push({ label: 'MQTT', field: 'mqtt', text });
  if (bootstrap) {
    const admin = `${bootstrap.email} (the account admin of the first organisation, just created)`;
    items.push({ label: 'Admin', field: 'admin', text: admin });
    const password = bootstrap.generatedPassword;
    if (password) items.push({ label: 'Password', field: 'password', text: `${password} (shown only this once)` });
  }
  return items;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
