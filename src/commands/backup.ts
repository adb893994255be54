/**
 * `thingbase backup <file>` (docs/configuration.md, "Backup"): a consistent copy of a SQLite store,
 * made with SQLite's online backup API while servers keep using the store.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Config } from '../core/config.ts';
import { ConfigError } from '../core/config.ts';
import { createPrivateFile, engineOf, sqlitePath } from '../store/dialect.ts';

/**
 * Copies the SQLite store of `config` to `file` (which must not exist yet). The first step of the
 * backup reads the page count; the second copies every page in one step, inside one read transaction,
 * so the copy is the store as of one commit even while servers write to it (in WAL mode writers go on
 * meanwhile). Answers the pages copied.
 */
export async function backupStore(config: Config, file: string): Promise<{ pages: number; file: string }> {
  if (engineOf(config.databaseUrl) !== 'sqlite') {
    // The store is one schema of the database when DATABASE_SCHEMA names it: that schema is what to dump.
    const schema = config.databaseSchema === undefined ? '' : ` --schema=${config.databaseSchema}`;
    throw new ConfigError(
      'backup copies SQLite stores only; DATABASE_URL names a PostgreSQL database: back it up with pg_dump ' +
        `(for example pg_dump --format=custom${schema} --file=thingbase.dump "$DATABASE_URL")`,
    );
  }
  const target = resolve(file);
  if (existsSync(target)) throw new ConfigError(`backup: ${target} exists already; name a new file`);
  const source = sqlitePath(config.databaseUrl);
  if (!existsSync(source)) throw new ConfigError(`backup: there is no SQLite store at ${source} (DATABASE_URL)`);
  const database = new BetterSqlite3(source, { fileMustExist: true });
  try {
    // The copy holds the store's sealed secrets: its owner's only, as the store is.
    createPrivateFile(target);
    database.pragma('busy_timeout = 5000');
    const result = await database.backup(target, { progress: () => 0x7fffffff });
    return { pages: result.totalPages, file: target };
  } finally {
    database.close();
  }
}
