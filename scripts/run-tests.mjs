#!/usr/bin/env node
// Runs the test suite with Node's own test runner (Node 20 does not expand globs itself).
// `npm test` runs everything; `npm test -- roles sessions` runs the files whose path contains a word.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...flags, ...files], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
