#!/usr/bin/env node
// `npm run coverage`: the test suite, as `npm test` runs it (`npm run coverage -- roles` runs the files
// whose path contains a word), with V8 coverage of every process and thread it starts. Then c8 reports
// branch, line and function coverage of src/: a summary, a view by folder, and per file in
// coverage/index.html. It fails when the tests fail or, for the whole suite, when branch coverage is
// under BRANCH_THRESHOLD, and ends with the test runner's summary.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, relative, resolve } from 'node:path';

/** Percent of the branches in src/ the suite must take. */
const BRANCH_THRESHOLD = 95;

const reports = resolve('coverage');
const temp = resolve(reports, 'tmp');
rmSync(reports, { recursive: true, force: true });
mkdirSync(temp, { recursive: true });

// The suite, its output passed through; its summary (the last lines, `# tests 913` ... in TAP, or
// `ℹ tests 913` ... from the spec reporter) is kept to end the output with.
const args = process.argv.slice(2);
const wholeSuite = args.every((a) => a.startsWith('-'));
// Through a pipe the runner would switch to TAP: a terminal keeps the report it would get from `npm test`.
const terminal = process.stdout.isTTY === true;
if (terminal && !args.some((a) => a.startsWith('--test-reporter'))) args.push('--test-reporter=spec');
const tests = spawn(process.execPath, ['scripts/run-tests.mjs', ...args], {
  env: { ...process.env, NODE_V8_COVERAGE: temp, ...(terminal ? { FORCE_COLOR: '1' } : {}) },
  stdio: ['inherit', 'pipe', 'inherit'],
});
let tail = '';
tests.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString()).slice(-4096);
});
const testsCode = await new Promise((done) => tests.on('close', (code) => done(code ?? 1)));
const lines = tail.trimEnd().split('\n');
let first = lines.length;
while (first > 0 && /^(# |ℹ )/.test(stripColour(lines[first - 1]))) first--;
const summary = lines.slice(first);

const c8 = createRequire(import.meta.url).resolve('c8/bin/c8.js');
const report = spawnSync(
  process.execPath,
  [
    c8,
    'report',
    `--temp-directory=${temp}`,
    `--reports-dir=${reports}`,
    '--all',
    '--src=.build/src',
    '--include=.build/src/**',
    '--reporter=text-summary',
    '--reporter=json-summary',
    '--reporter=json',
    '--reporter=html',
  ],
  { stdio: 'inherit' },
);
let coverageCode = report.status ?? 1;
if (coverageCode === 0) {
  const files = JSON.parse(readFileSync(resolve(reports, 'coverage-summary.json'), 'utf8'));
  const total = files.total;
  delete files.total;
  const folders = new Map();
  for (const [file, counts] of Object.entries(files)) {
    const folder = relative(process.cwd(), dirname(file));
    const sums = folders.get(folder) ?? { branches: [0, 0], lines: [0, 0], functions: [0, 0] };
    for (const kind of ['branches', 'lines', 'functions']) {
      sums[kind][0] += counts[kind].covered;
      sums[kind][1] += counts[kind].total;
    }
    folders.set(folder, sums);
  }
  const pct = ([covered, all]) => (all === 0 ? '100.00' : ((100 * covered) / all).toFixed(2));
  const width = Math.max(...[...folders.keys()].map((f) => f.length));
  console.log(`\n${'folder'.padEnd(width)}  branches           lines   functions`);
  for (const [folder, sums] of [...folders].sort(([a], [b]) => a.localeCompare(b))) {
    const branches = `${pct(sums.branches)} ${`(${sums.branches[0]}/${sums.branches[1]})`.padStart(11)}`;
    console.log(
      `${folder.padEnd(width)}  ${branches.padStart(18)}  ${pct(sums.lines).padStart(6)}  ${pct(sums.functions).padStart(10)}`,
    );
  }
  const branches = total.branches.pct;
  if (!wholeSuite) {
    console.log(`\nBranch coverage ${branches}% of some files; the threshold is checked on the whole suite.`);
  } else if (branches < BRANCH_THRESHOLD) {
    console.log(`\nBranch coverage ${branches}% is under the threshold of ${BRANCH_THRESHOLD}%.`);
    coverageCode = 1;
  } else {
    console.log(`\nBranch coverage ${branches}% meets the threshold of ${BRANCH_THRESHOLD}%.`);
  }
}
// The raw coverage of every process (hundreds of megabytes) has served; the reports stay.
rmSync(temp, { recursive: true, force: true });
if (summary.length > 0) console.log(`\n${summary.join('\n')}`);
process.exit(testsCode !== 0 ? testsCode : coverageCode);

function stripColour(text) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape that starts a colour
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}
