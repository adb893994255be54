import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AnswerCache } from '../../src/core/http/answer-cache.ts';

describe('answer cache', () => {
  it('when the revision differs from the one an answer was kept under then it is not served', () => {
    const cache = new AnswerCache();
    cache.set('k', 'org=1;', Buffer.from('{"a":1}'));
    assert.equal(cache.get('k', 'org=1;')?.toString(), '{"a":1}');
    assert.equal(cache.get('k', 'org=2;'), undefined);
    assert.equal(cache.get('other', 'org=1;'), undefined);
    cache.set('k', 'org=2;', Buffer.from('{"a":2}'));
    assert.equal(cache.get('k', 'org=2;')?.toString(), '{"a":2}');
    assert.equal(cache.size, 1);
  });

  it('when it is full then the oldest answers go first, by count and by bytes', () => {
    const byCount = new AnswerCache(2, 1000);
    byCount.set('a', '', Buffer.from('x'));
    byCount.set('b', '', Buffer.from('y'));
    byCount.set('c', '', Buffer.from('z'));
    assert.equal(byCount.get('a', ''), undefined);
    assert.equal(byCount.get('c', '')?.toString(), 'z');

    // At most 320 bytes, and no single answer over a sixteenth of that (20).
    const byBytes = new AnswerCache(100, 320);
    for (let i = 0; i < 16; i++) byBytes.set(`k${i}`, '', Buffer.alloc(20, 'x'));
    assert.equal(byBytes.size, 16);
    byBytes.set('k16', '', Buffer.alloc(20, 'y'));
    assert.equal(byBytes.get('k0', ''), undefined);
    assert.equal(byBytes.get('k1', '')?.toString(), 'x'.repeat(20));
    assert.equal(byBytes.size, 16);
    byBytes.set('big', '', Buffer.alloc(21, 'x'));
    assert.equal(byBytes.get('big', ''), undefined);
  });
});
