/**
 * How far V8 lets the heap grow between full collections. Left to itself, V8 lets a busy process's
 * heap grow to up to four times what was live after the last full collection. Under ingestion most
 * of that is short-lived garbage, promoted because it outlived two young collections while its
 * message waited for its commit; it piles up until the next full collection, and the peak RSS with
 * it. A fixed factor (HEAP_GROWING_PERCENT, default 100: twice the live size) collects it sooner, at
 * about the same throughput (docs/benchmarks.md).
 */
import { setFlagsFromString } from 'node:v8';

const FLAG = '--heap-growing-percent';

/** Whether node was started with the flag itself (NODE_OPTIONS cannot carry it): that choice then stands. */
function givenToNode(): boolean {
  return process.execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));
}

/** Sets the factor for the whole process (threads started later included); 0 keeps V8's own. */
export function limitHeapGrowth(percent: number): boolean {
  if (percent === 0 || givenToNode()) return false;
  setFlagsFromString(`${FLAG}=${percent}`);
  return true;
}
