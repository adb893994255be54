import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SocketCount } from '../../src/core/sockets.ts';

describe('SocketCount', () => {
  it('when sockets of one kind pass their own limit then that kind is refused, and past the budget either kind is', () => {
    const count = new SocketCount(10);
    for (let i = 0; i < 4; i++) count.add('http');
    assert.equal(count.past('http', 4), undefined);
    count.add('http');
    assert.equal(count.past('http', 4), 'kind');
    count.release('http');
    for (let i = 0; i < 6; i++) count.add('mqtt');
    assert.equal(count.past('mqtt', 100), undefined, '4 + 6 is the budget');
    count.add('mqtt');
    assert.equal(count.past('mqtt', 100), 'budget');
    assert.equal(count.past('http', 100), 'budget');
    for (let i = 0; i < 7; i++) count.release('mqtt');
    assert.equal(count.of('mqtt'), 0);
    assert.equal(count.past('http', 100), undefined);
  });

  it('when sockets of both kinds pass the budget and its room then they are past the room, and not before', () => {
    const count = new SocketCount(4);
    for (let i = 0; i < 3; i++) count.add('http');
    for (let i = 0; i < 3; i++) count.add('mqtt');
    assert.equal(count.past('mqtt', 100), 'budget');
    assert.equal(count.pastRoom(2), false, '6 is the budget and its room of 2');
    count.add('mqtt');
    assert.equal(count.pastRoom(2), true);
    count.release('http');
    assert.equal(count.pastRoom(2), false);
  });
});
