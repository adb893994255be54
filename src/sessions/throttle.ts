/**
 * Sign-in throttling (docs/api.md, "Sessions"): after 10 failures for one e-mail address within 15
 * minutes, or 50 from one client address, sign-ins are answered 429 until the window passes. Failures
 * are kept in the store, so every server instance sees the same count.
 */
import { rateLimited } from '../core/errors.ts';
import type { Executor } from '../store/store.ts';
import { recentSignInFailures } from './repository.ts';

export const THROTTLE_WINDOW_MS = 15 * 60 * 1000;
export const MAX_FAILURES_PER_EMAIL = 10;
export const MAX_FAILURES_PER_ADDRESS = 50;

export async function checkSignInThrottle(db: Executor, email: string, clientAddress: string, now: number) {
  const since = now - THROTTLE_WINDOW_MS;
  for (const [column, value, limit] of [
    ['email', email, MAX_FAILURES_PER_EMAIL],
    ['client_address', clientAddress, MAX_FAILURES_PER_ADDRESS],
  ] as const) {
    const { count, oldest } = await recentSignInFailures(db, column, value, since);
    if (count >= limit) {
      throw rateLimited((oldest + THROTTLE_WINDOW_MS - now) / 1000, 'too many failed sign-ins; try again later');
    }
  }
}
