/**
 * RecentReads (src/core/recent-reads.ts): values read from the store, used again for a short while
 * unless a change of their scope may have been missed by their read.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { monotonicNow, RecentReads } from '../../src/core/recent-reads.ts';

const TTL = 1000;

/** A moment surely after every change made so far has surely committed. */
const afterChanges = () => monotonicNow() + TTL + 1;

describe('RecentReads', () => {
  it('when a value is read then it is used until its time to live has passed since its read began', () => {
    const reads = new RecentReads<string>(TTL, 10);
    reads.set('token', 'alice', 'org', 100);
    assert.equal(reads.get('token', 100), 'alice');
    assert.equal(reads.get('token', 100 + TTL - 1), 'alice');
    assert.equal(reads.get('token', 100 + TTL), undefined);
    assert.equal(reads.get('other', 100), undefined);
  });

  it('when more values are kept than allowed then the oldest kept goes, and keeping one again makes it the newest', () => {
    const reads = new RecentReads<number>(TTL, 2);
    reads.set('a', 1, 's', 0);
    reads.set('b', 2, 's', 0);
    reads.set('a', 3, 's', 0);
    reads.set('c', 4, 's', 0);
    assert.equal(reads.get('b', 1), undefined, 'b was the oldest kept');
    assert.equal(reads.get('a', 1), 3);
    assert.equal(reads.get('c', 1), 4);
  });

  it('when a scope changes then its values are read again, and values of other scopes are kept', () => {
    const reads = new RecentReads<string>(TTL, 10);
    const readAt = afterChanges();
    reads.set('a', 'in org-1', 'org-1', readAt);
    reads.set('b', 'in org-2', 'org-2', readAt);
    reads.changed(['org-1']);
    assert.equal(reads.get('a', readAt + 1), undefined);
    assert.equal(reads.get('b', readAt + 1), 'in org-2');
  });

  it('when a read began before a change of its scope could have committed then its value is not used', () => {
    const reads = new RecentReads<string>(TTL, 10);
    const before = monotonicNow();
    reads.changed(['org']);
    const changedBy = monotonicNow();
    // Begun before the change: it may have read what the change replaced.
    reads.set('early', 'old', 'org', before);
    assert.equal(reads.get('early', before + 1), undefined);
    // Begun after the change but within the time it may take to commit.
    reads.set('soon', 'maybe old', 'org', changedBy + TTL / 2);
    assert.equal(reads.get('soon', changedBy + TTL / 2 + 1), undefined);
    // Begun once the change has surely committed.
    const late = changedBy + TTL + 1;
    reads.set('late', 'new', 'org', late);
    assert.equal(reads.get('late', late + 1), 'new');
    // Another scope's reads are not concerned.
    reads.set('elsewhere', 'kept', 'other', before);
    assert.equal(reads.get('elsewhere', before + 1), 'kept');
  });

  it('when asked whether a read saw every change then any scope changed since it began counts', () => {
    const reads = new RecentReads<string>(TTL, 10);
    const start = monotonicNow();
    assert.equal(reads.isAfterEveryChange(start), true, 'no change yet');
    reads.changed(['one']);
    assert.equal(reads.isAfterEveryChange(start), false);
    assert.equal(reads.isAfterEveryChange(afterChanges()), true);
  });

  it('when a value is deleted or all are cleared then they are read again', () => {
    const reads = new RecentReads<string>(TTL, 10);
    const readAt = afterChanges();
    reads.set('a', 'x', 's', readAt);
    reads.set('b', 'y', 's', readAt);
    reads.delete('a');
    assert.equal(reads.get('a', readAt), undefined);
    assert.equal(reads.get('b', readAt), 'y');
    reads.clear();
    assert.equal(reads.get('b', readAt), undefined);
  });

  it('when old changes are forgotten then recent changes of other scopes still count', async () => {
    const ttl = 5;
    const reads = new RecentReads<string>(ttl, 10);
    reads.changed(['old']);
    await sleep(4 * ttl);
    const before = monotonicNow();
    reads.changed(['recent']);
    reads.set('r', 'maybe old', 'recent', before);
    assert.equal(reads.get('r', before + 1), undefined);
    // A change of 'old' more than twice the time to live ago no longer matters to a read begun now.
    const now = monotonicNow();
    reads.set('o', 'fresh', 'old', now);
    assert.equal(reads.get('o', now + 1), 'fresh');
  });
});
