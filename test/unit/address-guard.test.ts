import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  guardedLookup,
  isPrivateAddress,
  isUndeliverable,
  PrivateAddressError,
} from '../../src/deliveries/address-guard.ts';

/** guardedLookup as a promise: the error, or what it answered. */
function lookup(hostname: string, options: object) {
  return new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
    guardedLookup(hostname, options, (error, address, family) => resolve({ error, address, family })),
  );
}

describe('outbound address guard', () => {
  it('when an address is private, loopback, link-local or not an address then it is refused; public ones pass', () => {
    for (const address of [
      '10.1.2.3',
      '127.0.0.1',
      '169.254.169.254',
      '192.168.0.1',
      '::1',
      'fe80::1',
      '::ffff:10.0.0.1',
      '::7f00:1',
      '64:ff9b::a00:1',
      'not-an-ip',
    ]) {
      assert.equal(isPrivateAddress(address), true, address);
    }
    for (const address of ['8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8']) {
      assert.equal(isPrivateAddress(address), false, address);
    }
  });

  it('when a name resolves to a private address then the lookup fails with a clear error', async () => {
    const { error } = await lookup('localhost', {});
    assert.ok(error instanceof PrivateAddressError);
    assert.match(error.message, /private or loopback address \(set ALLOW_PRIVATE_WEBHOOKS=true to allow\)/);
    assert.ok(isUndeliverable(new Error('wrapped', { cause: error })), 'not to be retried, however wrapped');
    // What the name resolves to is not told: the error is shown to the action's readers.
    assert.doesNotMatch(error.message, /127\.0\.0\.1|::1/);
  });

  it('when a name does not resolve then the resolver error is passed on', async () => {
    const { error } = await lookup('no-such-host.invalid', {});
    assert.ok(error);
    assert.ok(!(error instanceof PrivateAddressError));
    assert.equal(isUndeliverable(error), false, 'a name may resolve at the next attempt');
  });

  it('when a public address is looked up then it is answered one at a time, or as a list when asked for all', async () => {
    const one = await lookup('8.8.8.8', {});
    assert.equal(one.error, null);
    assert.equal(one.address, '8.8.8.8');
    assert.equal(one.family, 4);
    const all = await lookup('8.8.8.8', { all: true });
    assert.deepEqual(all.address, [{ address: '8.8.8.8', family: 4 }]);
  });
});
