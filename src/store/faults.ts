/**
 * What a store failure means for whoever asked (docs/operations.md, "When the database fails"): a full
 * disk, a database that refuses writes, or one that does not answer are named conditions, refused with
 * 503 and Retry-After, never internal errors. The store keeps the write faults it has seen until a
 * write succeeds again, for /readyz; each kind is logged at most once a minute.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ApiError } from '../core/errors.ts';
import { oncePerMinute } from '../core/log-limit.ts';

/** How long PostgreSQL may take to give a connection, new or from the pool, before the wait fails (ms). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 1000;

/** The longest a statement of a REST request may wait for its answer by default (DATABASE_STATEMENT_TIMEOUT_MS; ms). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000;

/**
 * The longest a statement of background work (the retention sweeper, the event compactor) may wait
 * for the database's answer by default (ms). Their statements are short (a sweep's delete takes about
 * 10 ms, a block a few); one waiting this long means the database hangs.
 */
export const DEFAULT_BACKGROUND_STATEMENT_MS = 30_000;

/** `full`: no space left; `read_only`: the database takes no writes; `unavailable`: it does not answer. */
export type StoreFault = 'full' | 'read_only' | 'unavailable';

/** A statement abandoned because the database gave no answer in its time (its connection is closed). */
export class StoreTimeoutError extends Error {
  override readonly name = 'StoreTimeoutError';
}

/**
 * Connection failures of node-postgres and Node itself, by message or code: the database refused,
 * reset or aborted the connection, its host or network cannot be reached or is down, its name does
 * not resolve now (EAI_AGAIN, a DNS server away), or the socket is no longer connected.
 */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|terminating connection|the database system is (starting up|shutting down|in recovery mode)|Connection ended unexpectedly/i;
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'EADDRNOTAVAIL',
  'ENOTCONN',
  'ESHUTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
]);

/** The fault a store error is, or undefined for any other error (a bug, a constraint, bad SQL). */
export function storeFaultOf(error: unknown): StoreFault | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    if (e instanceof StoreTimeoutError) return 'unavailable';
    const code = String((e as NodeJS.ErrnoException).code ?? '');
    // SQLite (better-sqlite3's codes) and PostgreSQL (SQLSTATE 53100 disk_full; ENOSPC as the message of
    // an I/O error, 58030), and a file system that ran out of space under either.
    if (code === 'SQLITE_FULL' || code === '53100' || /No space left on device|ENOSPC/i.test(e.message)) return 'full';
    if (code.startsWith('SQLITE_READONLY') || code === '25006') return 'read_only';
    // 08: connection exceptions; 57P01-57P03: shut down or cannot connect now; 57014: statement cancelled;
    // 53300: too many connections.
    if (
      code.startsWith('08') ||
      /^57P0[1-3]$/.test(code) ||
      code === '57014' ||
      code === '53300' ||
      // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_RECOVERY): another process holds the file.
      code.startsWith('SQLITE_BUSY') ||
      UNAVAILABLE_CODES.has(code) ||
      UNAVAILABLE_MESSAGE.test(e.message)
    ) {
      return 'unavailable';
    }
  }
  return undefined;
}

/** What a client is told about a fault: 503 with Retry-After, in the error shape of docs/api.md. */
export function refusalOfFault(fault: StoreFault): ApiError {
  const message = {
    full: 'storage is full: the server cannot store this now; send again later',
    read_only: 'the database refuses writes: the server cannot store this now; send again later',
    unavailable: 'the database does not answer; send again shortly',
  }[fault];
  return new ApiError(503, [{ code: 'unavailable', message }], undefined, {
    'retry-after': fault === 'unavailable' ? '1' : '5',
  });
}

/** What the log says of each fault (at most once a minute each). */
const LOGGED: Record<StoreFault, string> = {
  full: 'the disk of the database is full: writes are refused with 503 until space is freed (reads go on)',
  read_only: 'the database refuses writes (read-only): writes are refused with 503 until it takes them again',
  unavailable: 'the database does not answer or refused a connection: requests that need it are refused with 503',
};

/**
 * How long after the last refused write an ordinary write that succeeds is taken as the end of a write
 * fault (ms). On a full disk some writes still succeed (a row rewritten in a page that has room) while
 * every write that needs a new page fails; only the write probe (store.ts), which needs new space, ends
 * the fault sooner.
 */
const FAULT_QUIET_MS = 5000;

/** The write faults seen since writes succeeded again, told to /readyz and /metrics. */
export class StoreFaults {
  private writeFault: Exclude<StoreFault, 'unavailable'> | undefined;
  private writeFaultAt = 0;
  private readonly logLimit: (kind: StoreFault, message: string) => void;

  constructor(
    warn: (message: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.logLimit = oncePerMinute<StoreFault>(warn);
  }

  /** Notes a failure; answers the fault it is, if it is one. */
  note(error: unknown): StoreFault | undefined {
    const fault = storeFaultOf(error);
    if (fault === undefined) return undefined;
    if (fault !== 'unavailable') {
      this.writeFault = fault;
      this.writeFaultAt = this.now();
    }
    this.logLimit(fault, `${LOGGED[fault]} (${(error as Error).message})`);
    return fault;
  }

  /** A write succeeded: what refused writes before has passed, unless a write was refused just now. */
  wrote(): void {
    if (this.now() - this.writeFaultAt >= FAULT_QUIET_MS) this.writeFault = undefined;
  }

  /** The write probe, which needs new space, succeeded: writes are taken again. */
  probed(): void {
    this.writeFault = undefined;
  }

  /** The write fault seen last, while writes have not been taken again since. */
  get current(): Exclude<StoreFault, 'unavailable'> | undefined {
    return this.writeFault;
  }
}

/** The bounds the current work's statements run under: a time to be done by, and a longest statement. */
interface StatementBounds {
  /** Date.now() time. */
  deadline: number | undefined;
  statementMs: number | undefined;
  /**
   * Set once the work they bound is over. Work it started that goes on by itself (a timer it set, a
   * worker it woke) runs in the same async context, and must not inherit a deadline long past.
   */
  ended: boolean;
}

const bounds = new AsyncLocalStorage<StatementBounds>();

/**
 * Whether statements can be bounded in this process: once a PostgreSQL store is opened. SQLite answers
 * synchronously, and its statements are never abandoned; a process with only SQLite stores then runs
 * its work outside any async context, since an AsyncLocalStorage in use makes every promise of the
 * process pay for carrying it (a sixth of the server's CPU per message under an MQTT flood).
 */
let boundsApply = false;

/** Statements are bounded from now on (a PostgreSQL store was opened). */
export function applyStoreBounds(): void {
  boundsApply = true;
}

/**
 * Runs `work` with a deadline (`ms` from now, or the one it runs under already if sooner) for its
 * statements on PostgreSQL: a statement still unanswered then is abandoned with its connection
 * (store/dialect.ts), which the database rolls back, and fails with StoreTimeoutError. A database that
 * hangs so turns into prompt refusals. SQLite answers synchronously and needs none.
 */
export function withStoreDeadline<T>(ms: number, work: () => Promise<T>): Promise<T> {
  if (!boundsApply) return work();
  const outer = bounds.getStore();
  const at = Date.now() + ms;
  const deadline = outer?.deadline === undefined || outer.ended ? at : Math.min(outer.deadline, at);
  const bounded: StatementBounds = {
    deadline,
    statementMs: outer?.ended ? undefined : outer?.statementMs,
    ended: false,
  };
  return bounds.run(bounded, work).finally(() => {
    bounded.ended = true;
  });
}

/**
 * Runs `work` with each of its statements on PostgreSQL given at most `ms` to answer (0: no bound),
 * abandoned as by withStoreDeadline after that: for requests, whose reads may be long (an export runs
 * many statements) but none of whose statements should wait for ever.
 */
export function withStatementTimeout<T>(ms: number, work: () => T): T {
  if (ms <= 0 || !boundsApply) return work();
  const outer = bounds.getStore();
  return bounds.run({ deadline: outer?.ended ? undefined : outer?.deadline, statementMs: ms, ended: false }, work);
}

/**
 * Runs `work` under a deadline `ms` from now, as withStoreDeadline does, for work whose end is not a
 * promise's (a request, ended by endStoreBounds once answered).
 */
export function runWithStoreDeadline<T>(ms: number, work: () => T): T {
  if (!boundsApply) return work();
  const outer = bounds.getStore();
  return bounds.run(
    { deadline: Date.now() + ms, statementMs: outer?.ended ? undefined : outer?.statementMs, ended: false },
    work,
  );
}

/** The bounds the current work runs under, to end them when it is over (endStoreBounds). */
export function currentStoreBounds(): StatementBounds | undefined {
  return bounds.getStore();
}

/** Ends bounds: what runs on in their context afterwards is not bounded by them. */
export function endStoreBounds(ended: StatementBounds | undefined): void {
  if (ended) ended.ended = true;
}

/** How long a statement sent now may wait for its answer (ms), if it is bounded. */
export function statementWaitMs(): number | undefined {
  const current = bounds.getStore();
  if (current === undefined || current.ended) return undefined;
  const untilDeadline = current.deadline === undefined ? undefined : Math.max(0, current.deadline - Date.now());
  if (untilDeadline === undefined) return current.statementMs;
  return current.statementMs === undefined ? untilDeadline : Math.min(untilDeadline, current.statementMs);
}
