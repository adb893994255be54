/**
 * Bounded waits: for work that may never end (a database or broker that hangs), so that whoever waits
 * (a request, a stop) goes on after a while and the work, if it ends later, ends unwatched.
 */

/** Settled by a wait that ran out before the work did. */
export const LATE = Symbol('late');

/** What `work` settles to, or LATE once `ms` have passed first (ms <= 0: as long as the work takes). */
export function waitAtMost<T>(work: Promise<T>, ms: number): Promise<T | typeof LATE> {
  if (ms <= 0) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
