/**
 * The operations commands of `thingbase` (docs/configuration.md, "Command line"): `backup`, and
 * `import things` and `export events` against a running server.
 */
import type { Command } from 'commander';
import { loadConfig } from '../core/config.ts';
import { backupStore } from './backup.ts';
import { exportEvents, importThings, remoteOf } from './remote.ts';

const remoteOptions = (command: Command) =>
  command
    .option('--url <url>', 'the server (default: PUBLIC_BASE_URL, or http://HOST:PORT of the environment)')
    .option('--token <token>', 'an API key or session token (default: THINGBASE_TOKEN)');

export function addOperationsCommands(program: Command): void {
  program
    .command('backup')
    .description('copy a SQLite store, consistently, while servers keep using it (on PostgreSQL: use pg_dump)')
    .argument('<file>', 'the copy to make (a new file)')
    .action(async (file: string) => {
      const { pages, file: written } = await backupStore(loadConfig(), file);
      process.stdout.write(`Backed up ${pages} pages to ${written}.\n`);
    });

  remoteOptions(
    program
      .command('import')
      .description('import into a running server')
      .command('things')
      .description('create (or update, --mode upsert) things from a CSV file with POST /api/v3/things/import')
      .argument('<file.csv>', 'a header row naming Thing fields, then one row per thing')
      .option('--mode <mode>', 'create (an existing key is a row error) or upsert', 'create')
      .option('--dry-run', 'check every row and count, but write nothing', false)
      .option('--atomic', 'write nothing when any row fails', false),
  ).action(
    async (file: string, options: { url?: string; token?: string; mode: string; dryRun: boolean; atomic: boolean }) => {
      const complete = await importThings(remoteOf(options, loadConfig().publicBaseUrl), file, options);
      if (!complete) process.exitCode = 1;
    },
  );

  remoteOptions(
    program
      .command('export')
      .description('export from a running server')
      .command('events')
      .description("write a thing's events with GET /api/v3/things/:thing_key/events/export")
      .requiredOption('--thing <thing_key>', 'the thing')
      .option(
        '--from <time>',
        'first time: epoch seconds, or yyyy-mm-dd hh:mm:ss as thing_data reads it; default: the first event',
      )
      .option('--to <time>', 'last time, read as --from; default: the last event')
      .option('--format <format>', 'csv or ndjson', 'ndjson')
      .option('--output <file>', 'the file to write (default: standard output)'),
  ).action(
    async (options: {
      url?: string;
      token?: string;
      thing: string;
      from?: string;
      to?: string;
      format: string;
      output?: string;
    }) => {
      await exportEvents(remoteOf(options, loadConfig().publicBaseUrl), options);
    },
  );
}
