/**
 * Commands that work against a running server over its API (docs/configuration.md, "Command line"):
 * `import things` and `export events`. They sign in with an API key or session token (`--token`, or
 * THINGBASE_TOKEN), at `--url` or else the address the environment gives the server (PUBLIC_BASE_URL,
 * or HOST and PORT).
 */
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { ConfigError } from '../core/config.ts';
import { readDecimal } from '../core/decimal.ts';
import { startProgress } from './progress.ts';

export interface Remote {
  url: string;
  token: string;
}

/** How a command that talks to a running server is given its token, in the words each uses. */
export const TOKEN_OPTION = '--token <API key or session token> (or THINGBASE_TOKEN)';

/** The server and token a command talks to, from its options or the environment. */
export function remoteOf(
  options: { url?: string | undefined; token?: string | undefined },
  defaultUrl: string,
): Remote {
  const token = options.token || process.env.THINGBASE_TOKEN;
  if (!token) throw new ConfigError(`a token is needed: ${TOKEN_OPTION}`);
  return { url: (options.url || defaultUrl).replace(/\/+$/, ''), token };
}

/**
 * A request to the server at `url`; one that finds no server there says which address was tried and
 * how to give another, rather than the socket's bare `connect ECONNREFUSED 127.0.0.1:3000`. Every
 * command that talks to a running server (`import things`, `export events`, `simulate`) says it so.
 */
export async function ask(url: string, run: () => ReturnType<typeof request>): ReturnType<typeof request> {
  try {
    return await run();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (
      !/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET)$/.test(
        code,
      )
    ) {
      throw error;
    }
    throw new ConfigError(
      `cannot reach the server at ${url} (${code}): give its address with --url, or set PUBLIC_BASE_URL (or HOST and PORT) as the server has them`,
    );
  }
}

/** A Transform that tells how many bytes passed, and passes them on. */
function counter(onBytes: (total: number, chunk: Buffer) => void): Transform {
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      total += chunk.length;
      onBytes(total, chunk);
      done(null, chunk);
    },
  });
}

/** The error body of an answer as one line: its status and message. */
async function refusal(status: number, body: { text(): Promise<string> }): Promise<Error> {
  return new Error(refusalLine(status, await body.text()));
}

/** What a refusal says, as every command that talks to a running server says it: its status and message. */
export function refusalLine(status: number, text: string): string {
  let message = text;
  try {
    message = (JSON.parse(text) as { message: string }).message;
  } catch {
    // not the API's error body: its text as it is
  }
  return `the server answered ${status}: ${message}`;
}

export interface ImportOptions {
  mode: string;
  dryRun: boolean;
  atomic: boolean;
}

interface ImportAnswer {
  created: number;
  updated: number;
  failed: { row: number; errors: { param?: string; message: string }[] }[];
}

/**
 * Sends a CSV file to POST /api/v3/things/import, with the upload's progress; prints the counts and
 * each failed row. Answers whether every row was imported.
 */
export async function importThings(remote: Remote, file: string, options: ImportOptions): Promise<boolean> {
  const size = statSync(file).size;
  const progress = startProgress('import', size);
  const query = new URLSearchParams({
    mode: options.mode,
    dry_run: String(options.dryRun),
    atomic: String(options.atomic),
  });
  const body = createReadStream(file).pipe(counter((sent) => progress.update(sent, `${sent} of ${size} bytes sent`)));
  const response = await ask(remote.url, () =>
    request(`${remote.url}/api/v3/things/import?${query}`, {
      method: 'POST',
      headers: { 'x-auth-token': remote.token, 'content-type': 'text/csv', 'content-length': String(size) },
      body,
    }),
  ).catch((error: unknown) => {
    progress.stop('not sent');
    throw error;
  });
  if (response.statusCode !== 200) {
    progress.stop('refused');
    throw await refusal(response.statusCode, response.body);
  }
  const answer = (await response.body.json()) as ImportAnswer;
  const summary = `${options.dryRun ? 'would create' : 'created'} ${answer.created}, ${options.dryRun ? 'would update' : 'updated'} ${answer.updated}, failed ${answer.failed.length}`;
  progress.stop(summary);
  const lines = [summary];
  for (const failure of answer.failed) {
    const errors = failure.errors.map((e) => [e.param, e.message].filter(Boolean).join(' ')).join('; ');
    lines.push(`row ${failure.row}: ${errors}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return answer.failed.length === 0;
}

export interface ExportOptions {
  thing: string;
  from?: string | undefined;
  to?: string | undefined;
  format: string;
  output?: string | undefined;
}

/** The time (epoch seconds) of the last whole line of an export chunk, NDJSON or CSV, if it has one. */
const LAST_TIME = /(?:^|\n)(?:\{"timestamp":)?(\d{9,11})[,}][^\n]*\n$/;

/** `1 line`, `2 lines`. */
const countOf = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * Streams GET /api/v3/things/:thing_key/events/export to a file (or standard output), with progress
 * by the time of the events received when the range is bounded. Answers the events written.
 */
export async function exportEvents(remote: Remote, options: ExportOptions): Promise<number> {
  const query = new URLSearchParams({ format: options.format });
  if (options.from !== undefined) query.set('from', options.from);
  if (options.to !== undefined) query.set('to', options.to);
  const response = await ask(remote.url, () =>
    request(`${remote.url}/api/v3/things/${encodeURIComponent(options.thing)}/events/export?${query}`, {
      headers: { 'x-auth-token': remote.token },
    }),
  );
  if (response.statusCode !== 200) throw await refusal(response.statusCode, response.body);
  // A percentage when both bounds are epoch seconds (as the export writes event times); the server reads
  // the bounds itself, in any form thing_data takes.
  const from = readDecimal(options.from ?? '') ?? Number.NaN;
  const span = (readDecimal(options.to ?? '') ?? Number.NaN) - from;
  const known = span > 0;
  const progress = startProgress('export', known ? span : 0);
  // Records: lines, but in CSV not those inside a quoted field (a metric's name or a text value may
  // hold a line break; a quote inside one is written twice, which toggles twice).
  const csv = options.format === 'csv';
  let lines = 0;
  let quoted = false;
  let position = 0;
  let written = 0;
  const describe = () => `${countOf(written, 'byte')}, ${countOf(lines, 'line')}`;
  const count = counter((bytes, chunk) => {
    written = bytes;
    for (const byte of chunk) {
      if (csv && byte === 34) quoted = !quoted;
      else if (byte === 10 && !quoted) lines++;
    }
    const at = known ? LAST_TIME.exec(chunk.toString('utf8')) : null;
    if (at) position = Number(at[1]) - from;
    progress.update(position, describe());
  });
  const out: Writable = options.output === undefined ? process.stdout : createWriteStream(options.output);
  await pipeline(response.body, count, out);
  // The bar may have drawn an earlier count last: the final one before it ends.
  progress.update(position, describe());
  const events = csv ? Math.max(0, lines - 1) : lines;
  progress.stop(`${countOf(events, 'event')}${options.output === undefined ? '' : ` written to ${options.output}`}`);
  return events;
}
