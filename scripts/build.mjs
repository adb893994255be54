#!/usr/bin/env node
// Compiles src/ to dist/ (tsconfig.build.json), and with --if-changed only when the sources changed
// since the last build: `npm start` runs it so, `npm run build` and `npm ci` (prepare) without.
//
// "Changed" is decided on the sources' contents, not their times: a hash of every file under src/,
// the tsconfig files and the TypeScript version, kept in dist/.sources.sha256 after each build, and
// every source's output present. Asking `tsc -b` costs loading TypeScript (0.3-0.5 s) and trusts file
// times, so a release unpacked over an older one with the archive's (older) times kept, or an output
// deleted, was taken as up to date and the old build ran.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const SOURCES = 'src';
const OUT = 'dist';
const STAMP = join(OUT, '.sources.sha256');
const BUILD_INFO = join(OUT, '.tsbuildinfo');
const require = createRequire(import.meta.url);

/** Files under a folder, as sorted paths relative to the current directory. */
const filesUnder = (dir) =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name))
        .sort()
    : [];

/** The output tsc writes for a source file, if it writes one. */
const outputOf = (source) =>
  /\.ts$/.test(source) && !source.endsWith('.d.ts')
    ? join(OUT, source.slice(SOURCES.length + 1).replace(/\.ts$/, '.js'))
    : undefined;

const sources = filesUnder(SOURCES);
const hash = createHash('sha256');
hash.update(`typescript ${require('typescript/package.json').version}\n`);
for (const file of ['tsconfig.json', 'tsconfig.build.json', ...sources]) {
  hash.update(`${file}\n`);
  hash.update(readFileSync(file));
}
const fingerprint = hash.digest('hex');
const outputs = sources.map(outputOf).filter((output) => output !== undefined);
const missing = outputs.some((output) => !existsSync(output));

if (process.argv.includes('--if-changed') && !missing && existsSync(STAMP)) {
  if (readFileSync(STAMP, 'utf8').trim() === fingerprint) process.exit(0);
}

// tsc's incremental state knows only sources: an output deleted since would not be written again.
if (missing) rmSync(BUILD_INFO, { force: true });
rmSync(STAMP, { force: true });
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
});
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// Outputs of sources deleted since are deleted too, so that dist/ holds what src/ does.
const expected = new Set(outputs.flatMap((output) => [output, `${output}.map`]));
for (const file of filesUnder(OUT)) {
  if (/\.js(\.map)?$/.test(file) && !expected.has(file)) rmSync(file);
}
writeFileSync(STAMP, `${fingerprint}\n`);
