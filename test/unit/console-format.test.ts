import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { showDuration } from '../../console/src/format.ts';

describe("the console's durations", () => {
  it('when a span divides into days, hours or minutes then it is said in the largest, else in seconds', () => {
    assert.equal(showDuration(900), '15 min');
    assert.equal(showDuration(7200), '2 h');
    assert.equal(showDuration(86_400), '1 day');
    assert.equal(showDuration(2 * 86_400), '2 days');
    assert.equal(showDuration(90), '90 s');
    assert.equal(showDuration(0), '0 s');
  });
});
