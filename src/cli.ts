/**
 * The `thingbase` command: `thingbase serve` (the default) starts the server configured by the
 * environment (docs/configuration.md).
 */
import { pathToFileURL } from 'node:url';
import { createServer } from './app.ts';
import { loadConfig } from './core/config.ts';

const USAGE = `Usage: thingbase [serve]

  serve   start the server (configured by environment variables; see docs/configuration.md)
`;

export async function main(argv: string[]): Promise<void> {
  const command = argv[0] ?? 'serve';
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  if (command !== 'serve') throw new Error(`unknown command "${command}"\n${USAGE}`);
  await serve();
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const server = await createServer(config);
  const address = await server.app.listen({ port: config.port, host: config.host });
  const base = config.publicBaseUrl;
  const lines = [`Thingbase is listening on ${address} (API docs at ${base}/docs)`];
  if (server.mqttPort !== undefined) lines.push(`MQTT broker for devices on port ${server.mqttPort}`);
  if (config.mqttUrl) lines.push(`Serving devices through the MQTT broker at ${config.mqttUrl}`);
  if (server.bootstrap) {
    lines.push(`Created the first organisation and its account admin ${server.bootstrap.email}.`);
    if (server.bootstrap.generatedPassword) {
      lines.push(`Its password, shown only this once: ${server.bootstrap.generatedPassword}`);
      lines.push(
        `Sign in: curl -s -X POST ${base}/api_sign_in -H 'Content-Type: application/json' -d '{"email":"${server.bootstrap.email}","password":"${server.bootstrap.generatedPassword}"}'`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    server.app.log.info(`${signal} received, shutting down`);
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
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
