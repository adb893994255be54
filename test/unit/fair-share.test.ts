import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairShare, TurnQueue } from '../../src/events/fair-share.ts';

/** Puts batches of `size` of a source in while they are taken; answers how many were. */
function fill(
  shares: FairShare,
  queue: { rows: number },
  organisation: string,
  source: string,
  size: number,
  tries: number,
) {
  let taken = 0;
  for (let i = 0; i < tries; i++) {
    if (shares.refusal(organisation, source, size, queue.rows) !== undefined) continue;
    shares.take(organisation, source, size);
    queue.rows += size;
    taken++;
  }
  return taken;
}

describe('fair shares of the event writer', () => {
  it('when the queue is under its soft mark then every batch is taken, whoever holds what', () => {
    const shares = new FairShare({ capacity: 1000, softMark: 500 });
    const queue = { rows: 0 };
    assert.equal(fill(shares, queue, 'a', 'one', 10, 50), 50);
    assert.equal(queue.rows, 500);
  });

  it('when one organisation floods past the soft mark then it is refused at its share, and another organisation is still taken', () => {
    const shares = new FairShare({ capacity: 1000, softMark: 500 });
    const queue = { rows: 0 };
    fill(shares, queue, 'flood', 'http', 100, 100);
    assert.equal(queue.rows, 500, 'alone it holds half: room is kept for whoever comes next');
    assert.equal(shares.refusal('flood', 'http', 100, queue.rows), 'organisation');
    assert.equal(fill(shares, queue, 'modest', 'mqtt:1', 1, 1), 1);
    for (let device = 2; device <= 50; device++) {
      assert.equal(fill(shares, queue, 'modest', `mqtt:${device}`, 1, 1), 1, `device ${device} is taken`);
    }
    assert.equal(
      fill(shares, queue, 'flood', 'other-client', 100, 5),
      1,
      'another client of the flooding organisation: one batch, then it holds its part of an organisation past its share',
    );
    assert.notEqual(shares.refusal('flood', 'other-client', 100, queue.rows), undefined);
  });

  it("when one source of an organisation floods then it is refused at its share, and the organisation's other sources are still taken", () => {
    const shares = new FairShare({ capacity: 1000, softMark: 100 });
    const queue = { rows: 0 };
    const greedy = fill(shares, queue, 'a', 'greedy', 10, 100);
    // Share of the organisation: 1000 / 2; of the source, alone in it: 500 / 2.
    assert.equal(greedy * 10, 250);
    assert.equal(shares.refusal('a', 'greedy', 10, queue.rows), 'source');
    for (let device = 0; device < 100; device++) {
      assert.equal(fill(shares, queue, 'a', `modest${device}`, 1, 1), 1, `modest source ${device} is taken`);
    }
  });

  it('when a holder has nothing in the queue then its batch is taken even if larger than a share', () => {
    const shares = new FairShare({ capacity: 100, softMark: 10 });
    const queue = { rows: 0 };
    fill(shares, queue, 'a', 'x', 40, 1);
    assert.equal(shares.refusal('b', 'y', 60, queue.rows), undefined);
  });

  it('when batches leave the queue then their holders are forgotten: memory follows the queue, not the sources ever seen', () => {
    const shares = new FairShare({ capacity: 1000, softMark: 0 });
    for (let source = 0; source < 10_000; source++) {
      shares.take(`org${source % 10}`, `s${source}`, 1);
      shares.give(`org${source % 10}`, `s${source}`, 1);
    }
    assert.deepEqual(shares.remembered, { organisations: 0, sources: 0 });
    shares.take('a', 's', 2);
    shares.give('a', 's', 1);
    assert.deepEqual(shares.remembered, { organisations: 1, sources: 1 });
    shares.give('a', 's', 1);
    assert.deepEqual(shares.remembered, { organisations: 0, sources: 0 });
  });

  it('when organisations queue batches then they are served in turns, each organisation in its own order', () => {
    const queue = new TurnQueue<string>();
    for (let i = 0; i < 5; i++) queue.push('flood', `f${i}`);
    queue.push('modest', 'm0');
    queue.push('modest', 'm1');
    assert.equal(queue.length, 7);
    assert.equal(queue.peek(), 'f0');
    const served: string[] = [];
    while (queue.length > 0) served.push(queue.shift() as string);
    assert.deepEqual(served, ['f0', 'm0', 'f1', 'm1', 'f2', 'f3', 'f4']);
    assert.equal(queue.shift(), undefined);
    assert.equal(queue.peek(), undefined);
  });

  it("when a transaction is taken then each organisation has its part of the rows, its first batch however large, and a flood's bulks keep no one's events waiting", () => {
    const queue = new TurnQueue<{ name: string; rows: number }>();
    const rows = (item: { rows: number }) => item.rows;
    // A flood of bulks as large as a transaction, and a hundred single events of another organisation.
    for (let i = 0; i < 4; i++) queue.push('flood', { name: `f${i}`, rows: 1000 });
    for (let i = 0; i < 100; i++) queue.push('modest', { name: `m${i}`, rows: 1 });
    const first = queue.take(1000, 4000, rows);
    assert.deepEqual(
      first.map((item) => item.name),
      ['f0', ...Array.from({ length: 100 }, (_, i) => `m${i}`)],
      'every modest event is in the first transaction, beside one bulk',
    );
    assert.equal(queue.lanesWaiting, 1);
    assert.deepEqual(
      queue.take(1000, 4000, rows).map((item) => item.name),
      ['f1'],
    );
    // Only what fits: parts of 500 rows each for two organisations, then turns while the next fits.
    const mixed = new TurnQueue<{ name: string; rows: number }>();
    for (let i = 0; i < 10; i++) mixed.push('a', { name: `a${i}`, rows: 100 });
    for (let i = 0; i < 3; i++) mixed.push('b', { name: `b${i}`, rows: 100 });
    const taken = mixed.take(1000, 4000, rows).map((item) => item.name);
    assert.deepEqual(taken, ['a0', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2', 'a5', 'a6']);
    assert.equal(mixed.length, 3);
    // Each organisation's first batch, however large, while the whole stays within `most`.
    const large = new TurnQueue<{ name: string; rows: number }>();
    for (const key of ['x', 'y', 'z']) large.push(key, { name: key, rows: 3000 });
    assert.deepEqual(
      large.take(1000, 7000, rows).map((item) => item.name),
      ['x', 'y'],
    );
    assert.deepEqual(
      large.take(1000, 7000, rows).map((item) => item.name),
      ['z'],
    );
  });
});
