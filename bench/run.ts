/**
 * `npm run bench -- <name>`: runs bench/<name>.ts. Every benchmark measures a baseline in the same
 * run and reports its figures as a ratio to it, because these machines are shared and noisy.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter(
    (f) =>
      f.endsWith('.ts') && !['run.ts', 'support.ts', 'mqtt-load.ts', 'autocannon.d.ts', 'console-pages.ts'].includes(f),
  )
  .map((f) => f.replace(/\.ts$/, ''));
const name = process.argv[2];
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}> [options]`);
  process.exit(1);
}
const module = (await import(join(here, `${name}.ts`))) as { run(args: string[]): Promise<void> };
await module.run(process.argv.slice(3));
