import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AnswerCache } from '../../src/core/http/answer-cache.ts';

describe('answer cache', () => {
  it('when the revision differs from the one an answer was kept under then it is not served', () => {
    const cache = new AnswerCache();
    cache.set('k', 'org=1;', '{"a":1}');
    assert.equal(cache.get('k', 'org=1;'), '{"a":1}');
    assert.equal(cache.get('k', 'org=2;'), undefined);
    assert.equal(cache.get('other', 'org=1;'), undefined);
    cache.set('k', 'org=2;', '{"a":2}');
    assert.equal(cache.get('k', 'org=2;'), '{"a":2}');
    assert.equal(cache.size, 1);
  });

  it('when it is full then the oldest answers go first, by count and by characters', () => {
    const byCount = new AnswerCache(2, 1000);
    byCount.set('a', '', 'x');
    byCount.set('b', '', 'y');
    byCount.set('c', '', 'z');
    assert.equal(byCount.get('a', ''), undefined);
    assert.equal(byCount.get('c', ''), 'z');

    // At most 320 characters, and no single answer over a sixteenth of that (20).
    const byCharacters = new AnswerCache(100, 320);
    for (let i = 0; i < 16; i++) byCharacters.set(`k${i}`, '', 'x'.repeat(20));
    assert.equal(byCharacters.size, 16);
    byCharacters.set('k16', '', 'y'.repeat(20));
    assert.equal(byCharacters.get('k0', ''), undefined);
    assert.equal(byCharacters.get('k1', ''), 'x'.repeat(20));
    assert.equal(byCharacters.size, 16);
    byCharacters.set('big', '', 'x'.repeat(21));
    assert.equal(byCharacters.get('big', ''), undefined);
  });
});
