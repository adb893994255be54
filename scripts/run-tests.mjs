#!/usr/bin/env node
// Runs the test suite with Node's own test runner (Node 20 does not expand globs itself).
// `npm test` runs everything; `npm test -- roles sessions` runs the files whose path contains a word.
//
// Files run in parallel, each in its own process: every API suite has its own store (a SQLite file,
// or a PostgreSQL schema) and its own ports. Much of a suite's time is spent waiting (on PostgreSQL,
// on child processes starting, on timers), so more files run at once than there are cores.
// TEST_CONCURRENCY sets how many (1 runs them one after another).
//
// The suite runs compiled: tsc builds src/ and test/ into .build/ first (incrementally, a few seconds
// when little changed), because loading the TypeScript of the whole server through a loader costs
// every test file, and every server process the tests start, a second of CPU more.
// A test file may still be run from source on its own: `node --import tsx --test test/api/x.test.ts`.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

const words = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('-'));
const files = readdirSync('test', { recursive: true })
  .map((f) => join('test', String(f)))
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => words.length === 0 || words.some((w) => f.includes(w)))
  .sort();
if (files.length === 0) {
  console.error(`no test file matches ${words.join(' ')}`);
  process.exit(1);
}
// The files that start thingbase as processes of its own take longest: they start first, so that
// the run does not end with one of them running alone.
const startsProcesses = (file) => readFileSync(file, 'utf8').includes('support/process.ts');
const ordered = [...files.filter(startsProcesses), ...files.filter((f) => !startsProcesses(f))];
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.test.json'], { stdio: 'inherit' });
if (build.status !== 0) {
  console.error('the TypeScript build of the suite failed');
  process.exit(build.status ?? 1);
}
// The compiled server reads its version from the package.json above its src/ folder.
mkdirSync('.build', { recursive: true });
copyFileSync('package.json', '.build/package.json');
// The built console sits beside src/ as well (src/core/config.ts, CONSOLE_DIR's default). The build may
// have put console modules that unit tests import in .build/console, so only its dist is linked there.
mkdirSync('.build/console', { recursive: true });
if (!isLink('.build/console/dist') && !existsSync('.build/console/dist')) {
  symlinkSync('../../console/dist', '.build/console/dist');
}
const compiled = (file) => join('.build', file.replace(/\.ts$/, '.js'));

const concurrency = Number(process.env.TEST_CONCURRENCY) || availableParallelism() + 1;
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', '--test', `--test-concurrency=${concurrency}`, ...flags, ...ordered.map(compiled)],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);

/** Whether `path` is a symbolic link, even one whose target is missing (a console not built yet). */
function isLink(path) {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
