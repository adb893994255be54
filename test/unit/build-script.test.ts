import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

/** scripts/build.mjs, as `npm start` (with --if-changed) and `npm run build` run it; tests run from the root. */
const script = join(process.cwd(), 'scripts', 'build.mjs');

/** A project of two source files laid out as this one is (src/ compiled to dist/). */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-build-'));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'package.json'), '{"type": "module"}');
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', strict: true, sourceMap: true, skipLibCheck: true },
    }),
  );
  writeFileSync(
    join(dir, 'tsconfig.build.json'),
    JSON.stringify({
      extends: './tsconfig.json',
      compilerOptions: { rootDir: 'src', outDir: 'dist', incremental: true, tsBuildInfoFile: 'dist/.tsbuildinfo' },
      include: ['src'],
    }),
  );
  writeFileSync(join(dir, 'src', 'a.ts'), 'export const a: number = 1;\n');
  writeFileSync(join(dir, 'src', 'b.ts'), 'export const b: string = "b";\n');
  return dir;
}

function build(dir: string, ...args: string[]) {
  const run = spawnSync(process.execPath, [script, ...args], { cwd: dir, encoding: 'utf8' });
  return { code: run.status, output: run.stdout + run.stderr };
}

const stampTime = (dir: string) => statSync(join(dir, 'dist', '.sources.sha256')).mtimeMs;
const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8');

describe('the build before npm start (scripts/build.mjs)', () => {
  it('when nothing changed then it does not compile; a source changed with an older time, or an output deleted, is compiled', async () => {
    const dir = project();
    assert.equal(build(dir).code, 0);
    assert.match(read(dir, 'dist/a.js'), /export const a = 1;/);
    const built = stampTime(dir);

    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(build(dir, '--if-changed').code, 0);
    assert.equal(stampTime(dir), built, 'nothing changed: no compilation');

    // A release unpacked over another keeps the archive's times, older than the last build's.
    writeFileSync(join(dir, 'src', 'a.ts'), 'export const a: number = 2;\n');
    utimesSync(join(dir, 'src', 'a.ts'), new Date('2020-01-01'), new Date('2020-01-01'));
    assert.equal(build(dir, '--if-changed').code, 0);
    assert.match(read(dir, 'dist/a.js'), /export const a = 2;/);

    rmSync(join(dir, 'dist', 'b.js'));
    assert.equal(build(dir, '--if-changed').code, 0);
    assert.match(read(dir, 'dist/b.js'), /export const b = "b";/);
  });

  it('when a source is deleted then its outputs are; a type error fails every start until it is fixed', () => {
    const dir = project();
    assert.equal(build(dir).code, 0);
    rmSync(join(dir, 'src', 'b.ts'));
    assert.equal(build(dir, '--if-changed').code, 0);
    assert.equal(existsSync(join(dir, 'dist', 'b.js')), false);
    assert.equal(existsSync(join(dir, 'dist', 'b.js.map')), false);
    assert.equal(existsSync(join(dir, 'dist', 'a.js')), true);

    writeFileSync(join(dir, 'src', 'a.ts'), 'export const a: number = "one";\n');
    const failed = build(dir, '--if-changed');
    assert.notEqual(failed.code, 0);
    assert.match(failed.output, /TS2322/);
    assert.notEqual(build(dir, '--if-changed').code, 0, 'tried again, not taken as built');
    writeFileSync(join(dir, 'src', 'a.ts'), 'export const a: number = 3;\n');
    assert.equal(build(dir, '--if-changed').code, 0);
    assert.match(read(dir, 'dist/a.js'), /export const a = 3;/);
  });
});
