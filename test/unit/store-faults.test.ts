import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refusalOfFault, StoreFaults, storeFaultOf } from '../../src/store/faults.ts';

const full = Object.assign(new Error('could not extend file: No space left on device'), { code: '53100' });

describe('store write faults', () => {
  it('when a write succeeds while others are refused for a full disk then the disk is still full', () => {
    let now = 1_000_000;
    const faults = new StoreFaults(
      () => {},
      () => now,
    );
    assert.equal(faults.note(full), 'full');
    now += 100;
    // A row rewritten in a page that had room: no proof that new space can be had.
    faults.wrote();
    assert.equal(faults.current, 'full');
    now += 5000;
    faults.wrote();
    assert.equal(faults.current, undefined, 'no write refused for a while: writes are taken again');
  });

  it('when the write probe succeeds then the fault ends at once', () => {
    const faults = new StoreFaults(() => {});
    faults.note(full);
    faults.probed();
    assert.equal(faults.current, undefined);
  });

  it('when the disk is full many times in a minute then it is logged once', () => {
    const lines: string[] = [];
    const faults = new StoreFaults((line) => lines.push(line));
    for (let i = 0; i < 50; i++) faults.note(full);
    assert.equal(lines.length, 1);
    assert.match(lines[0] as string, /disk of the database is full/);
  });
});

describe('connection failures', () => {
  /** A failure as Node gives it (a syscall error with its code), wrapped as the driver may wrap it. */
  const failure = (code: string) =>
    new Error('connection failed', { cause: Object.assign(new Error(`connect ${code} db:5432`), { code }) });

  for (const code of [
    'EAI_AGAIN',
    'EAI_FAIL',
    'ENETUNREACH',
    'ENETDOWN',
    'ENETRESET',
    'ECONNABORTED',
    'EHOSTDOWN',
    'EADDRNOTAVAIL',
    'ENOTCONN',
    'ESHUTDOWN',
    'ECONNREFUSED',
    'ECONNRESET',
  ]) {
    it(`when the database cannot be reached (${code}) then it is the database not answering, a 503`, () => {
      assert.equal(storeFaultOf(failure(code)), 'unavailable');
      assert.equal(refusalOfFault('unavailable').status, 503);
    });
  }

  it('when another process holds the SQLite file (SQLITE_BUSY and its extended codes) then it is the database not answering', () => {
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_BUSY_TIMEOUT']) {
      assert.equal(storeFaultOf(Object.assign(new Error('database is locked'), { code })), 'unavailable', code);
    }
  });

  it('when a statement fails otherwise then it is no store fault (a 500 says a bug)', () => {
    assert.equal(storeFaultOf(Object.assign(new Error('syntax error'), { code: '42601' })), undefined);
    assert.equal(storeFaultOf(Object.assign(new Error('no such file'), { code: 'ENOENT' })), undefined);
  });
});
