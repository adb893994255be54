import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseLogFormat, readableLine } from '../../src/core/log-format.ts';

describe('readable log lines', () => {
  const at = new Date(2026, 10, 28, 9, 5, 7).getTime();

  it('when a line has a message and fields then it reads time, level, message and the fields', () => {
    const line = readableLine(
      `${JSON.stringify({ level: 40, time: at, pid: 1, hostname: 'h', msg: 'disk full', path: '/var/db', free: 0, note: 'two words' })}\n`,
    );
    assert.equal(line, '09:05:07 WARN  disk full path=/var/db free=0 note="two words"\n');
  });

  it('when a line carries an error then its message and indented stack follow', () => {
    const line = readableLine(
      JSON.stringify({ level: 50, time: at, err: { message: 'boom', stack: 'Error: boom\n    at x (y.ts:1:1)' } }),
    );
    assert.equal(line, '09:05:07 ERROR boom\n    Error: boom\n        at x (y.ts:1:1)\n');
  });

  it('when a line is not JSON then it is written as it is', () => {
    assert.equal(readableLine('plain text'), 'plain text\n');
  });

  it('when LOG_FORMAT is unset then a terminal gets readable lines and anything else JSON', () => {
    assert.equal(chooseLogFormat(undefined, true), 'pretty');
    assert.equal(chooseLogFormat(undefined, false), 'json');
    assert.equal(chooseLogFormat('json', true), 'json');
    assert.equal(chooseLogFormat('pretty', false), 'pretty');
  });
});
