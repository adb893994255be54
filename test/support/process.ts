/** Runs `thingbase serve` as its own process, as an operator would, for tests that kill or restart it. */
import { type ChildProcess, spawn } from 'node:child_process';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * How node starts the CLI: compiled beside this file when the suite runs compiled (as `npm test` runs it),
 * else from source through the TypeScript loader.
 */
export const cli = (args: string[]): string[] =>
  extname(fileURLToPath(import.meta.url)) === '.ts'
    ? ['--import', 'tsx', 'src/cli.ts', ...args]
    : [fileURLToPath(new URL('../../src/cli.js', import.meta.url)), ...args];

/** The environment every test process starts with: any free port, no MQTT, a cheap password hash. */
const testEnv = (env: Record<string, string>) => ({
  ...process.env,
  PORT: '0',
  MQTT_PORT: '0',
  LOG_LEVEL: 'warn',
  THINGBASE_PASSWORD_HASH_COST: '1024',
  API_RATE_LIMIT: '1000000',
  ...env,
});

/** `openFiles`: the process's open-file limit, as `ulimit -n` sets it. */
export async function serveProcess(
  env: Record<string, string>,
  options: { openFiles?: number } = {},
): Promise<ServerProcess> {
  const [command, args] =
    options.openFiles === undefined
      ? [process.execPath, cli(['serve'])]
      : ['/bin/sh', ['-c', `ulimit -n ${options.openFiles} && exec "$@"`, 'sh', process.execPath, ...cli(['serve'])]];
  const child = spawn(command, args, {
    env: testEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      // A line of its own on a terminal, a JSON log line's message elsewhere (docs/configuration.md).
      const match = /listening on (https?:\/\/[^\s"]+)/.exec(output);
      if (match) {
        child.stdout?.off('data', onData);
        child.stdout?.on('data', (more: Buffer) => {
          output += more.toString();
        });
        resolve({ child, url: match[1] as string, output: () => output });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`thingbase exited (${code ?? signal}) before listening:\n${output}`)),
    );
  });
}

export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `thingbase <args>` to its end (a `serve` that fails to start, or any other command). */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawn(process.execPath, cli(args), {
    env: testEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // A command that does not end (a `serve` that started after all) fails the test instead of hanging it.
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/**
 * What a server's start message says under `field` (`console`, `api_docs`, `mqtt`, `admin`,
 * `password`): off a terminal, as the servers of tests run, a member of the JSON log line that says
 * where it listens (docs/configuration.md, "Starting").
 */
export function startField(output: string, field: string): string | undefined {
  const line = output.split('\n').find((l) => l.startsWith('{') && l.includes(' is listening on '));
  if (line === undefined) return undefined;
  const value = (JSON.parse(line) as Record<string, unknown>)[field];
  return typeof value === 'string' ? value : undefined;
}

/** The password a first start made, from its start message. */
export const startPassword = (output: string): string | undefined =>
  /^(\S+) \(shown only this once\)$/.exec(startField(output, 'password') ?? '')?.[1];
