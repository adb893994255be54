import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashPassword, verifyPassword } from '../../src/users/passwords.ts';

describe('password hashes', () => {
  it('when a password is hashed then only that password verifies against it', async () => {
    const stored = await hashPassword('correct horse', 1024);
    assert.match(stored, /^scrypt\$1024\$8\$1\$/);
    assert.equal(await verifyPassword('correct horse', stored), true);
    assert.equal(await verifyPassword('wrong horse', stored), false);
  });

  it('when the stored hash is of another scheme or incomplete then nothing verifies against it', async () => {
    assert.equal(await verifyPassword('x', 'bcrypt$10$abc'), false);
    assert.equal(await verifyPassword('x', 'scrypt$1024$8$1'), false);
    assert.equal(await verifyPassword('x', ''), false);
  });

  it('when the stored cost is not one scrypt accepts then verifying fails rather than answering', async () => {
    const [, , r, p, salt, hash] = (await hashPassword('pw', 1024)).split('$');
    await assert.rejects(verifyPassword('pw', ['scrypt', 1000, r, p, salt, hash].join('$')));
  });
});
