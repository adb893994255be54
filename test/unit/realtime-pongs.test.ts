import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { IDLE_MS, PING_EVERY_MS, watchPongs } from '../../src/realtime/routes.ts';

/** A WebSocket's side that watchPongs uses: counts pings; the test answers them or not. */
class Socket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  pings = 0;
  ping(): void {
    this.pings++;
  }
}

describe('realtime WebSocket pings', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] }));
  afterEach(() => mock.timers.reset());

  it('when a socket never answers a ping then it is closed 60 s after it opened, not at a later ping', () => {
    const socket = new Socket();
    let closedAt: number | undefined;
    let now = 0;
    const stop = watchPongs(socket as never, () => {
      closedAt = now;
    });
    for (; now < 100_000; now += 1000) mock.timers.tick(1000);
    assert.equal(closedAt, IDLE_MS - 1000);
    assert.equal(socket.pings, Math.floor(100_000 / PING_EVERY_MS));
    stop();
  });

  it('when pongs stop then the socket is closed 60 s after the last pong', () => {
    const socket = new Socket();
    let closedAt: number | undefined;
    let now = 0;
    const stop = watchPongs(socket as never, () => {
      closedAt = now;
    });
    // Answered at 20 and 40 s (the pings), then silent: closed at 100 s, where a check at each ping
    // would close it at 120 s.
    for (; now < 200_000; now += 1000) {
      mock.timers.tick(1000);
      if (now + 1000 <= 40_000 && (now + 1000) % PING_EVERY_MS === 0) socket.emit('pong');
    }
    assert.equal(closedAt, 40_000 + IDLE_MS - 1000);
    stop();
  });
});
