import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/core/config.ts';

/** Runs limitHeapGrowth in a node of its own, started with `nodeArgs`; answers what it returned. */
function limitInChild(nodeArgs: string[]): string {
  const script = "import('./src/core/heap.ts').then((m) => process.stdout.write(String(m.limitHeapGrowth(100))))";
  const child = spawnSync(process.execPath, ['--import', 'tsx', ...nodeArgs, '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  return child.stdout;
}

describe('configuration', () => {
  it('when HEAP_GROWING_PERCENT is absent then the heap may grow to twice the live size; 0 leaves V8 its own', () => {
    assert.equal(loadConfig({}).heapGrowingPercent, 100);
    assert.equal(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent, 0);
    assert.equal(loadConfig({ HEAP_GROWING_PERCENT: '250' }).heapGrowingPercent, 250);
  });

  it('when HEAP_GROWING_PERCENT is not a whole percentage then the configuration is refused', () => {
    for (const text of ['-1', '1.5', 'half', '1001']) {
      assert.throws(() => loadConfig({ HEAP_GROWING_PERCENT: text }), ConfigError, text);
    }
  });

  it('when node is started with its own --heap-growing-percent then the server keeps it', () => {
    assert.equal(limitInChild([]), 'true');
    assert.equal(limitInChild(['--heap-growing-percent=300']), 'false');
    assert.equal(limitInChild(['--heap_growing_percent=300']), 'false');
  });
});
