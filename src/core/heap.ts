/**
 * How far V8 lets the heap grow between full collections. V8 picks a growing factor after each full
 * collection from its collector's speed, bounded by the heap's size limit: up to 4 (the heap may
 * reach four times what was live) when the old generation may hold 2 GB or more, which is Node's
 * default on machines with about 8 GB of memory or more; between 1.3 and 2 under smaller limits.
 * Under ingestion most of what the server allocates is garbage within milliseconds, but a message
 * waiting for its commit outlives the young collections, so its garbage is promoted and piles up
 * until the next full collection, and the peak RSS with it. On a large heap the server therefore
 * fixes the factor at 1 + HEAP_GROWING_PERCENT / 100 (default 100: twice the live size), which kept
 * the throughput and cut the peak RSS by about a quarter (docs/benchmarks-history.md, "evening session
 * (2 x Intel Xeon, 2026-11-23 evening)"). Under smaller limits V8's own factor is no larger than that
 * already, and it stays V8's.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

const FLAG = '--heap-growing-percent';
/** Heap limits from which V8 lets the heap grow fourfold (its old generation 2 GB or more). */
const LARGE_HEAP_LIMIT = 2 * 1024 * 1024 * 1024;

/** Whether node was started with the flag itself (NODE_OPTIONS cannot carry it): that choice then stands. */
function givenToNode(): boolean {
  return process.execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));
}

/**
 * Sets the factor for the whole process (threads started later included) when the heap is large
 * enough for V8 to let it grow further on its own; 0 leaves (or gives back) V8's own. Answers whether
 * the factor is now fixed by this call.
 */
export function limitHeapGrowth(percent: number): boolean {
  if (givenToNode()) return false;
  const fixed = percent > 0 && getHeapStatistics().heap_size_limit >= LARGE_HEAP_LIMIT;
  setFlagsFromString(`${FLAG}=${fixed ? percent : 0}`);
  return fixed;
}
