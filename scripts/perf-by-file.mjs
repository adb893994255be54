#!/usr/bin/env node
// Splits a Linux `perf` profile of the server by source file: `perf script -i perf.data |
// node scripts/perf-by-file.mjs [--functions N]` (docs/benchmarks.md, "Profiling").
//
// Each sample counts once, for the file of the innermost JavaScript function on its stack, with
// whatever native code that function called (a statement's SQLite and fsync count for the function
// that ran it); a sample with no JavaScript on its stack counts for what its native code was doing
// (the collector, the compiler, the event loop, the rest). `perf report` gives the same profile by
// function, whose many small entries hide where a pipeline's time goes.
import { createInterface } from 'node:readline';

const functionsShown = Number(process.argv[process.argv.indexOf('--functions') + 1] || 0);
// A frame of JavaScript, as V8 names it for perf: "JS:*name file:line:column" (* optimized, ^ baseline,
// ~ interpreted).
const JS_FRAME = /JS:[*^~+]?(\S*) (\S+?):(\d+):\d+/;
const NATIVE = [
  ['[garbage collection]', /Scaveng|Marking|MarkCompact|Sweeper|Heap::|GCTracer|Evacuat|MemoryAllocator/],
  ['[compiler]', /compiler::|Compiler|Turbofan|Maglev/],
  ['[event loop]', /uv__io_poll|epoll/],
];

const files = new Map();
const functions = new Map();
let samples = 0;
const count = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
// Paths from the project and its dependencies are shortened to dist/..., node_modules/<package>/...
const shortFile = (file) => file.replace(/^.*?\/(dist|src|bench|node_modules)\//, '$1/');

function sample(frames) {
  if (frames.length === 0) return;
  samples++;
  for (const frame of frames) {
    const js = JS_FRAME.exec(frame);
    if (!js) continue;
    const file = shortFile(js[2]);
    count(files, file);
    count(functions, `${js[1] || '(anonymous)'} ${file}:${js[3]}`);
    return;
  }
  const stack = frames.join('');
  count(files, NATIVE.find(([, pattern]) => pattern.test(stack))?.[0] ?? '[other native]');
}

let frames = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') {
    sample(frames);
    frames = [];
  } else if (/^\s/.test(line)) frames.push(line);
  else frames = [];
}
sample(frames);

const table = (map, limit) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([key, n]) => `${String(n).padStart(7)} ${((100 * n) / samples).toFixed(1).padStart(5)}%  ${key}`)
    .join('\n');
console.log(`${samples} samples\n${table(files, 40)}`);
if (functionsShown > 0) console.log(`\nby function\n${table(functions, functionsShown)}`);
