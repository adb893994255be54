/**
 * Progress of a long command: a bar (cli-progress) when its output is a terminal, else a plain line
 * at most every second and one at the end, which logs and scripts can read.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** `value` out of the total (0 when the total is unknown); `note` says what has been done. */
  update(value: number, note: string): void;
  stop(summary: string): void;
}

export function startProgress(label: string, total: number, out: NodeJS.WriteStream = process.stderr): Progress {
  if (out.isTTY) {
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {percentage}% | {note}`, stream: out, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(total, 1), 0, { note: '' });
    return {
      update: (value, note) => bar.update(Math.min(value, Math.max(total, 1)), { note }),
      stop: (summary) => {
        bar.update(Math.max(total, 1), { note: summary });
        bar.stop();
      },
    };
  }
  let nextAt = 0;
  return {
    update: (_value, note) => {
      if (Date.now() < nextAt) return;
      nextAt = Date.now() + 1000;
      out.write(`${label}: ${note}\n`);
    },
    stop: (summary) => out.write(`${label}: ${summary}\n`),
  };
}
