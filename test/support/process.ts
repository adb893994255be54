/** Runs `thingbase serve` as its own process, as an operator would, for tests that kill or restart it. */
import { type ChildProcess, spawn } from 'node:child_process';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

export async function serveProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    env: { ...process.env, PORT: '0', MQTT_PORT: '0', LOG_LEVEL: 'warn', THINGBASE_PASSWORD_HASH_COST: '1024', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
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
