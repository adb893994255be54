/**
 * Infrastructure that fails on purpose, for the fault tests (docs/operations.md, "When the database
 * fails"): a private PostgreSQL cluster to crash or hang, a small file system to fill, a private
 * Mosquitto to kill. Each needs root (and PostgreSQL's or Mosquitto's binaries); where they are missing
 * the test is skipped with the reason, except under CI=true, where that is a failure.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { sqliteMaxPages } from '../../src/store/dialect.ts';
import { freePort } from './ports.ts';

const PG_BIN = '/usr/lib/postgresql/15/bin';
const MOSQUITTO = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find(existsSync);

/** A reason to skip, or false; under CI a reason is an error instead. */
function skipUnless(reason: string | false): string | false {
  if (reason && process.env.CI) throw new Error(`CI needs this fault test to run: ${reason}`);
  return reason;
}

const isRoot = () => process.getuid?.() === 0;

export const postgresFaultSkip = skipUnless(
  !isRoot()
    ? 'not root: a private PostgreSQL cluster is started as the postgres user'
    : !existsSync(`${PG_BIN}/initdb`)
      ? `no PostgreSQL 15 binaries in ${PG_BIN}`
      : false,
);

export const mosquittoFaultSkip = skipUnless(MOSQUITTO ? false : 'no mosquitto binary');

/** Whether something listens on a loopback port. */
export const reachable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export interface PrivatePostgres {
  url: string;
  /** Starts the cluster again (after crash or stop). */
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: every process ends at once, as in a crash. */
  crash(): void;
  /** SIGSTOP to every process of the cluster: it hangs, its sockets open. */
  pause(): void;
  resume(): void;
  /** Stops it and removes its files. */
  remove(): void;
}

/** A PostgreSQL 15 cluster of its own on a free port, in a temporary directory owned by postgres. */
export async function privatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-pg-'));
  const data = join(dir, 'data');
  const port = await freePort();
  const { uid, gid } = postgresIds();
  chownSync(dir, uid, gid);
  const asPostgres = (args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', ...args], { stdio: 'pipe', cwd: dir });
  asPostgres([`${PG_BIN}/initdb`, '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const pgctl = (...args: string[]) => asPostgres([`${PG_BIN}/pg_ctl`, '-D', data, ...args]);
  const pids = (): number[] => {
    const main = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(main)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((pid) => pid > 0);
    return [main, ...children];
  };
  const cluster: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: async () => {
      pgctl(
        '-o',
        `-p ${port} -k ${dir} -c fsync=off -c listen_addresses=127.0.0.1`,
        '-l',
        join(dir, 'log'),
        '-w',
        'start',
      );
    },
    crash: () => {
      pgctl('-m', 'immediate', 'stop');
    },
    pause: () => {
      for (const pid of pids()) process.kill(pid, 'SIGSTOP');
    },
    resume: () => {
      for (const pid of pids()) process.kill(pid, 'SIGCONT');
    },
    remove: () => {
      try {
        cluster.resume();
        pgctl('-m', 'immediate', 'stop');
      } catch {
        // Not running.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}

function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

export interface SmallDisk {
  dir: string;
  /**
   * How the disk is made small: a tmpfs of its own, or (for SQLite, where mounting is not allowed) a
   * database file that may not grow past a size, SQLITE_MAX_SIZE_MB, set in `env`.
   */
  kind: 'tmpfs' | 'max_page_count';
  /** What the server is started with besides. */
  env: Record<string, string>;
  /** Takes every byte left. */
  fill(): void;
  /** Gives back what fill took. */
  free(): void;
  remove(): void;
}

/**
 * A directory on a file system of `megabytes` that a test can fill: a tmpfs mounted for it. Where
 * mounting is not allowed, answers why (the caller falls back to a size-limited SQLite file).
 */
export function smallDisk(megabytes: number): SmallDisk | string {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-disk-'));
  if (!isRoot()) return 'not root: cannot mount a tmpfs';
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs (${(error as Error).message.split('\n')[0]})`;
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    kind: 'tmpfs',
    env: {},
    fill: () => {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(1 << 16, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
      // What a whole chunk no longer fitted, byte by byte.
      const small = openSync(filler, 'a');
      try {
        for (;;) writeSync(small, Buffer.alloc(512, 1));
      } catch {
        // Full.
      } finally {
        closeSync(small);
      }
    },
    free: () => rmSync(filler, { force: true }),
    remove: () => {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A private cluster whose database `thingbase` lives in a tablespace on a tmpfs of `megabytes` (its
 * WAL on the big disk, as a database on a disk of its own has it); `url` is that database's.
 */
export async function postgresOnSmallDisk(
  megabytes: number,
): Promise<{ cluster: PrivatePostgres; disk: SmallDisk; url: string }> {
  const cluster = await privatePostgres();
  const disk = smallDisk(megabytes);
  if (typeof disk === 'string') {
    cluster.remove();
    throw new Error(`PostgreSQL runs here, but ${disk}`);
  }
  try {
    // A tablespace's directory is the cluster's user's, and empty.
    const location = join(disk.dir, 'tablespace');
    mkdirSync(location);
    const { uid, gid } = postgresIds();
    chownSync(location, uid, gid);
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    try {
      await admin.query(`CREATE TABLESPACE small LOCATION '${location}'`);
      await admin.query('CREATE DATABASE thingbase TABLESPACE small');
    } finally {
      await admin.end();
    }
  } catch (error) {
    cluster.remove();
    disk.remove();
    throw error;
  }
  return { cluster, disk, url: cluster.url.replace(/\/postgres$/, '/thingbase') };
}

export interface PrivateMosquitto {
  url: string;
  /** SIGKILL: it ends at once, its connections cut. */
  kill(): Promise<void>;
  /** SIGSTOP: it hangs, its connections open (clients still count themselves connected). */
  pause(): void;
  resume(): void;
  start(): Promise<void>;
  remove(): Promise<void>;
}

/** A Mosquitto of its own on a free port, started with a configuration file (anonymous clients allowed). */
export async function privateMosquitto(): Promise<PrivateMosquitto> {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-mosquitto-'));
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  execFileSync('sh', ['-c', `printf 'listener ${port} 127.0.0.1\\nallow_anonymous true\\n' > ${conf}`]);
  let child: ChildProcess | undefined;
  const broker: PrivateMosquitto = {
    url: `mqtt://127.0.0.1:${port}`,
    start: async () => {
      const started = spawn(MOSQUITTO as string, ['-c', conf], { stdio: 'ignore' });
      child = started;
      // It never keeps the test's process alive, and ends with it however that ends.
      started.unref();
      process.once('exit', () => started.kill('SIGKILL'));
      for (let i = 0; i < 100; i++) {
        if (await reachable(port)) return;
        if (started.exitCode !== null) throw new Error(`mosquitto exited (${started.exitCode})`);
        await sleep(50);
      }
      throw new Error('mosquitto did not start listening');
    },
    kill: async () => {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('mosquitto did not end within 5 s of SIGKILL')), 5000);
      });
      await Promise.race([exited, late]).finally(() => clearTimeout(timer));
    },
    pause: () => {
      child?.kill('SIGSTOP');
    },
    resume: () => {
      child?.kill('SIGCONT');
    },
    remove: async () => {
      await broker.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await broker.start();
  return broker;
}

/**
 * A directory for a SQLite store on a disk of `megabytes` that a test can fill: a tmpfs where mounting
 * is allowed (or unless FAULT_DISK=max_page_count asks for the other), else the second best, which
 * still goes through SQLITE_FULL: the server's file may not grow past `megabytes` (SQLITE_MAX_SIZE_MB,
 * SQLite's max_page_count), and fill() takes every page left with a table of its own, written through
 * a connection of the test's (free() drops it, and the server uses its pages again).
 */
export function sqliteDisk(megabytes: number, file = 'thingbase.db'): SmallDisk {
  const mounted = process.env.FAULT_DISK === 'max_page_count' ? 'max_page_count asked for' : smallDisk(megabytes);
  if (typeof mounted !== 'string') return mounted;
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-disk-'));
  const path = join(dir, file);
  const withFile = <T>(work: (database: BetterSqlite3.Database) => T): T => {
    const database = new BetterSqlite3(path);
    try {
      database.pragma('busy_timeout = 10000');
      // The filler need not survive a power cut.
      database.pragma('synchronous = OFF');
      database.pragma(`max_page_count = ${sqliteMaxPages(database, megabytes * 1024 * 1024)}`);
      return work(database);
    } finally {
      database.close();
    }
  };
  return {
    dir,
    kind: 'max_page_count',
    env: { SQLITE_MAX_SIZE_MB: String(megabytes) },
    fill: () =>
      withFile((database) => {
        database.exec('create table if not exists test_filler (bytes blob)');
        const insert = database.prepare('insert into test_filler values (?)');
        // Big rows first, then ever smaller ones for what a big one no longer fits in.
        for (let size = 1 << 16; size >= 64; size >>= 2) {
          try {
            for (;;) insert.run(Buffer.alloc(size, 1));
          } catch (error) {
            if ((error as { code?: string }).code !== 'SQLITE_FULL') throw error;
          }
        }
      }),
    free: () => withFile((database) => database.exec('drop table if exists test_filler')),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
