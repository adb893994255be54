/**
 * Log lines for people: on a terminal, pino's JSON lines are written as `12:04:05 WARN  message
 * key=value`, an error's stack below its line (docs/configuration.md, `LOG_FORMAT`). Elsewhere (a
 * service manager's journal, a log collector) the JSON lines stay as they are.
 */

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that the line's own text already says. */
const LEFT_OUT = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'err']);

export type LogFormat = 'json' | 'pretty';

/** The format to write: LOG_FORMAT when set, else readable lines on a terminal only. */
export function chooseLogFormat(configured: LogFormat | undefined, isTerminal: boolean): LogFormat {
  return configured ?? (isTerminal ? 'pretty' : 'json');
}

const twoDigits = (n: number) => String(n).padStart(2, '0');

function showValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** One JSON log line as a readable line (or the line unchanged when it is not JSON). */
export function readableLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = new Date(typeof entry.time === 'number' ? entry.time : Date.now());
  const clock = `${twoDigits(time.getHours())}:${twoDigits(time.getMinutes())}:${twoDigits(time.getSeconds())}`;
  const level = (LEVELS[entry.level as number] ?? String(entry.level)).padEnd(5);
  const extras = Object.entries(entry)
    .filter(([key]) => !LEFT_OUT.has(key))
    .map(([key, value]) => `${key}=${showValue(value)}`);
  const err = entry.err as { message?: string; stack?: string } | undefined;
  const message = typeof entry.msg === 'string' ? entry.msg : (err?.message ?? '');
  let line = [clock, level, message, ...extras].join(' ').trimEnd();
  if (err?.stack) line += `\n${err.stack.replace(/^/gm, '    ')}`;
  return `${line}\n`;
}

/** A destination for pino that writes readable lines to `out`. */
export function readableLogStream(out: { write(text: string): unknown }): { write(line: string): void } {
  return { write: (line) => void out.write(readableLine(line)) };
}
