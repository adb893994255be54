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
    for (const text of ['-1', '1.5', 'half', '1001', ' ', '0x64', '1e2']) {
      assert.throws(() => loadConfig({ HEAP_GROWING_PERCENT: text }), ConfigError, text);
    }
  });

  it('when node is started with its own --heap-growing-percent then the server keeps it', () => {
    const large = ['--max-old-space-size=4096'];
    assert.equal(limitInChild(large), 'true');
    assert.equal(limitInChild([...large, '--heap-growing-percent=300']), 'false');
    assert.equal(limitInChild([...large, '--heap_growing_percent=300']), 'false');
  });

  it('when the heap limit is under 2 GB then V8 keeps its own factor, which is no larger there', () => {
    assert.equal(limitInChild(['--max-old-space-size=1024']), 'false');
    assert.equal(limitInChild(['--max-old-space-size=2048']), 'true');
  });
});
