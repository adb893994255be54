/**
 * Password hashing with scrypt, a memory-hard function built into Node (docs/api.md, "Users"). Stored
 * form: scrypt$N$r$p$<salt base64>$<hash base64>, so the cost can rise without breaking old hashes.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LENGTH, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string, cost = 16384): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost, 8, 1);
  return ['scrypt', cost, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash no password matches, verified against when the user does not exist, so timing reveals nothing. */
let decoy: Promise<string> | undefined;
export function decoyHash(cost: number): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'), cost);
  return decoy;
}
