/** Waiting in a browser test for what the page draws over a few frames or a few seconds. */
import assert from 'node:assert/strict';

/** Polls `read` until `check` holds, failing with the last value after `ms`. */
export async function until<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  what: string,
  ms = 10_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)}`);
    await new Promise((done) => setTimeout(done, 50));
    value = await read();
  }
  return value;
}
