/**
 * `thingbase copy-store` (docs/configuration.md, "Moving from SQLite to PostgreSQL"): copies every
 * table of a stopped SQLite store into an empty PostgreSQL database or schema, whose schema it brings
 * up to date with the same migrations first.
 *
 * The whole copy is one transaction on PostgreSQL, under an exclusive lock of every table: a failure
 * anywhere (a lost connection, a value PostgreSQL refuses, a count that does not match) rolls it back
 * and leaves the target as empty as it was, so the command can simply be run again. The SQLite store
 * is read in one read transaction, so the copy is the store as of one moment, a batch of rows at a
 * time after the last row id read: memory holds one batch, whatever the size of the store.
 */
import { existsSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import type { Command } from 'commander';
import { CompiledQuery } from 'kysely';
import { type Config, ConfigError, loadConfig } from '../core/config.ts';
import { redactUrl } from '../core/urls.ts';
import { partitionOf } from '../events/partitions.ts';
import { databaseUnreachable, openConfiguredStore } from '../startup.ts';
import { arrayLiteral, engineOf, sqlitePath } from '../store/dialect.ts';
import { MIGRATIONS } from '../store/migrations/index.ts';
import { pgDriver } from '../store/pg-driver.ts';
import { LATEST_MIGRATION, type Tx } from '../store/store.ts';
import { STORE_TABLES, type StoreTable } from '../store/tables.ts';
import { startProgress } from './progress.ts';

/** Registers `thingbase copy-store` on the command line. */
export function addCopyStoreCommand(program: Command): void {
  program
    .command('copy-store')
    .description(
      'copy a stopped SQLite store into an empty PostgreSQL database or schema, bringing its schema up to date first',
    )
    .option('--from <url>', 'the SQLite store, sqlite:<path> (default: DATABASE_URL when it names one)')
    .option('--to <url>', 'the PostgreSQL database, postgres://... (default: DATABASE_URL when it names one)')
    .option('--schema <schema>', 'the PostgreSQL schema to copy into, created if missing (default: DATABASE_SCHEMA)')
    .action(async (options: { from?: string; to?: string; schema?: string }) => {
      const config = loadConfig();
      const configured = engineOf(config.databaseUrl);
      const from = options.from ?? (configured === 'sqlite' ? config.databaseUrl : undefined);
      const to = options.to ?? (configured === 'postgres' ? config.databaseUrl : undefined);
      if (from === undefined)
        throw new ConfigError('copy-store: name the SQLite store to copy with --from sqlite:<path>');
      if (to === undefined)
        throw new ConfigError('copy-store: name the PostgreSQL database to copy into with --to postgres://...');
      const schema = options.schema ?? config.databaseSchema;
      const result = await copyStore(config, { from, to, schema });
      process.stdout.write(`${copySummary(result, sqlitePath(from), to, schema).join('\n')}\n`);
    });
}

export interface CopyStoreOptions {
  /** `sqlite:<path>` of the store to copy. */
  from: string;
  /** `postgres://...` of the database to copy into. */
  to: string;
  /** The PostgreSQL schema to copy into (PostgreSQL's default when undefined). */
  schema: string | undefined;
  /** Progress lines go here (standard error). */
  progress?: NodeJS.WriteStream;
}

export interface CopyStoreResult {
  /** Rows copied, per table, in the order copied. */
  rows: { table: StoreTable; rows: number }[];
  /** Migrations the target's schema was brought up to date with. */
  migrated: string[];
  elapsedMs: number;
}

/** Rows read and written per statement at most. */
const BATCH_ROWS = 10_000;
/** Bytes of values past which a batch ends sooner, so memory stays bounded whatever the rows hold. */
const BATCH_BYTES = 8 * 1024 * 1024;

/** A column as both engines have it: its name, and the type PostgreSQL gives it. */
interface TargetColumn {
  name: string;
  type: string;
}

const quoted = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * Copies the SQLite store `from` into the empty PostgreSQL database (or schema) `to`, with progress
 * on `progress`; refuses (ConfigError, nothing written) a source not at the latest migration and a
 * target that holds anything.
 */
export async function copyStore(config: Config, options: CopyStoreOptions): Promise<CopyStoreResult> {
  const started = Date.now();
  const progressOut = options.progress ?? process.stderr;
  const source = openSource(options.from);
  try {
    await refuseFilledTarget(options.to, options.schema);
    const migrated: string[] = [];
    const target = await openConfiguredStore(
      { ...config, databaseUrl: options.to, databaseSchema: options.schema },
      (names) => migrated.push(...names),
    );
    try {
      const rows = await target.transaction(async (tx) => {
        // No server may write into the target while it is filled: one starting now waits for the commit.
        await run(tx, `lock table ${STORE_TABLES.map(quoted).join(', ')} in exclusive mode`);
        await refuseRowsIn(tx);
        // A second connection watches the file: its data version changes with any other connection's
        // commit (a server still running on the store), which the copy's own read transaction would not
        // see. Looked at after every batch, so such a copy stops early, and once more at the end.
        const watch = new BetterSqlite3(sqlitePath(options.from), { readonly: true, fileMustExist: true });
        try {
          const version = watch.pragma('data_version', { simple: true });
          const unchanged = () => {
            if (watch.pragma('data_version', { simple: true }) === version) return;
            throw new ConfigError(
              `copy-store: the SQLite store ${sqlitePath(options.from)} was written to while it was copied (a server ` +
                'or another command still uses it): stop it and run copy-store again. Nothing was copied into PostgreSQL.',
            );
          };
          source.exec('begin');
          const copied: CopyStoreResult['rows'] = [];
          for (const table of STORE_TABLES) {
            copied.push({ table, rows: await copyTable(source, tx, table, progressOut, unchanged) });
          }
          await setSequences(source, tx);
          await checkCounts(source, tx, copied);
          source.exec('commit');
          unchanged();
          return copied;
        } finally {
          watch.close();
        }
      });
      return { rows, migrated, elapsedMs: Date.now() - started };
    } finally {
      await target.close();
    }
  } finally {
    source.close();
  }
}

/** Opens the SQLite store read-only, after checking that it is one and that its schema is current. */
function openSource(from: string): BetterSqlite3.Database {
  if (engineOf(from) !== 'sqlite') {
    throw new ConfigError(`copy-store: --from must name a SQLite store (sqlite:<path>), not ${redactUrl(from)}`);
  }
  const path = sqlitePath(from);
  if (path === ':memory:' || !existsSync(path)) {
    throw new ConfigError(`copy-store: there is no SQLite store at ${path} (--from)`);
  }
  const source = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  try {
    source.pragma('busy_timeout = 5000');
    let applied: string[];
    try {
      applied = (source.prepare('select name from kysely_migration').all() as { name: string }[]).map((r) => r.name);
    } catch {
      throw new ConfigError(`copy-store: ${path} is not a Thingbase store (it has no migrations table)`);
    }
    const unknown = applied.filter((name) => !(name in MIGRATIONS));
    if (unknown.length > 0) {
      throw new ConfigError(
        `copy-store: the SQLite store ${path} was migrated by a newer release of Thingbase (migration ${unknown.join(', ')} ` +
          'is unknown to this one): copy it with that release or a newer one',
      );
    }
    const missing = Object.keys(MIGRATIONS).filter((name) => !applied.includes(name));
    if (missing.length > 0) {
      const at = applied.sort().at(-1) ?? 'none';
      throw new ConfigError(
        `copy-store: the SQLite store ${path} is at migration ${at}, not ${LATEST_MIGRATION}: bring it up to date ` +
          `first with DATABASE_URL=sqlite:${path} thingbase migrate, then run copy-store again`,
      );
    }
    return source;
  } catch (error) {
    source.close();
    throw error;
  }
}

const filledTarget = (to: string, schema: string | undefined, what: string) =>
  new ConfigError(
    `copy-store: the PostgreSQL ${schema ? `schema ${schema} of ` : ''}database ${redactUrl(to)} is not empty ` +
      `(${what}): copy-store copies into an empty database or schema only. Name another with --to or --schema ` +
      '(a new schema is created). Nothing was written.',
  );

/**
 * Refuses, before its schema is touched, a target that already has organisations or users (a server
 * ran on it): nothing is written to it, not even the migrations.
 */
async function refuseFilledTarget(to: string, schema: string | undefined): Promise<void> {
  if (engineOf(to) !== 'postgres') {
    throw new ConfigError(`copy-store: --to must name a PostgreSQL database (postgres://...), not ${redactUrl(to)}`);
  }
  const client = new (pgDriver().Client)({
    connectionString: to,
    connectionTimeoutMillis: 10_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  try {
    await client.connect();
  } catch (error) {
    throw new ConfigError(`copy-store: ${databaseUnreachable(to, error as Error, '--to').message}`);
  }
  try {
    const { rows } = await client.query<{ organisations: string | null; users: string | null }>(
      `select to_regclass('organisations')::text as organisations, to_regclass('users')::text as users`,
    );
    const present = rows[0];
    if (!present?.organisations || !present.users) return;
    const counted = await client.query<{ organisations: number; users: number }>(
      'select (select count(*) from organisations) as organisations, (select count(*) from users) as users',
    );
    const { organisations, users } = counted.rows[0] as { organisations: number; users: number };
    if (Number(organisations) > 0 || Number(users) > 0) {
      throw filledTarget(to, schema, `${organisations} organisation(s), ${users} user(s)`);
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/** Refuses a target any table of which holds a row (left by a start that made no organisation, say). */
async function refuseRowsIn(tx: Tx): Promise<void> {
  const holding: string[] = [];
  for (const table of STORE_TABLES) {
    const [row] = await run<{ filled: boolean }>(tx, `select exists (select 1 from ${quoted(table)}) as filled`);
    if (row?.filled) holding.push(table);
  }
  if (holding.length > 0) {
    throw new ConfigError(
      `copy-store: the target is not empty (rows in ${holding.join(', ')}): copy-store copies into an empty ` +
        'database or schema only. Name another with --to or --schema. Nothing was copied.',
    );
  }
}

async function run<R>(tx: Tx, text: string, parameters: readonly unknown[] = []): Promise<R[]> {
  return (await tx.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))).rows;
}

/** The table's columns on PostgreSQL, in order, and whether it is partitioned. */
async function targetTable(tx: Tx, table: StoreTable): Promise<{ columns: TargetColumn[]; partitioned: boolean }> {
  const columns = await run<TargetColumn>(
    tx,
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
     from pg_attribute a where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped
     order by a.attnum`,
    [quoted(table)],
  );
  const [kind] = await run<{ relkind: string }>(tx, 'select relkind from pg_class where oid = $1::regclass', [
    quoted(table),
  ]);
  return { columns, partitioned: kind?.relkind === 'p' };
}

/**
 * A SQLite value as PostgreSQL's column type takes it. Both stores keep booleans as 0/1 integers and
 * JSON as text (store/tables.ts), so most values pass as they are; integers are read exactly (as
 * bigint) and passed as numbers, or as text beyond 2^53.
 */
function toTarget(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') {
    if (type === 'boolean') return value !== 0n;
    const number = Number(value);
    if (type === 'text' || type.startsWith('character') || type === 'json' || type === 'jsonb') return value.toString();
    return Number.isSafeInteger(number) ? number : value.toString();
  }
  if (type === 'boolean') return Boolean(value);
  if (Buffer.isBuffer(value)) return type === 'bytea' ? value : value.toString('utf8');
  if (type === 'text' && typeof value === 'number') return String(value);
  return value;
}

/** About the bytes a value read from SQLite holds (blobs twice over: PostgreSQL's arrays take them as hex). */
function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Buffer.isBuffer(value)) return value.length * 2;
  return 8;
}

/**
 * Copies one table, a batch at a time in row id order, through its parent table on PostgreSQL when
 * it is partitioned (making the partitions its rows need first). Answers the rows copied.
 */
async function copyTable(
  source: BetterSqlite3.Database,
  tx: Tx,
  table: StoreTable,
  progressOut: NodeJS.WriteStream,
  unchanged: () => void,
): Promise<number> {
  const { columns, partitioned } = await targetTable(tx, table);
  const sourceColumns = (source.pragma(`table_info(${quoted(table)})`) as { name: string }[]).map((c) => c.name);
  const targetNames = columns.map((c) => c.name);
  if ([...sourceColumns].sort().join() !== [...targetNames].sort().join()) {
    throw new Error(
      `copy-store: the columns of ${table} differ between the stores (SQLite: ${sourceColumns.join(', ')}; ` +
        `PostgreSQL: ${targetNames.join(', ')})`,
    );
  }
  if (partitioned && table !== 'event_blocks') {
    throw new Error(
      `copy-store: ${table} is partitioned on PostgreSQL, and copy-store knows the partitions of event_blocks only`,
    );
  }
  const total = Number(
    (source
      .prepare(`select count(*) from ${quoted(table)}`)
      .pluck()
      .get() as number) ?? 0,
  );
  const read = source
    .prepare(
      `select rowid, ${columns.map((c) => quoted(c.name)).join(', ')} from ${quoted(table)}
       where rowid > ? order by rowid limit ?`,
    )
    .raw(true)
    .safeIntegers(true);
  const insert =
    `insert into ${quoted(table)} (${columns.map((c) => quoted(c.name)).join(', ')}) ` +
    `select * from unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`;
  const minTimestamp = columns.findIndex((c) => c.name === 'min_timestamp');
  const partitions = new Set<number>();
  const progress = startProgress(`copy-store ${table}`, total, progressOut);
  let after: bigint = -(2n ** 63n);
  let copied = 0;
  // One batch's insert runs on PostgreSQL while the next batch is read and converted here.
  let inserting: Promise<unknown> = Promise.resolve();
  let insertingRows = 0;
  let insertingFrom = after;
  const inserted = async () => {
    try {
      await inserting;
    } catch (error) {
      throw new ConfigError(
        `copy-store: PostgreSQL refused a row of ${table} (SQLite row ids ${insertingFrom} to ${after}): ` +
          `${(error as Error).message}. Nothing was copied: the transaction was rolled back.`,
      );
    }
    unchanged();
    copied += insertingRows;
    insertingRows = 0;
    if (copied < total) progress.update(copied, `${copied.toLocaleString('en')} of ${total.toLocaleString('en')} rows`);
  };
  for (;;) {
    // Up to BATCH_ROWS rows after the last one read, fewer when they hold more than BATCH_BYTES.
    const rows: unknown[][] = [];
    let bytes = 0;
    for (const row of read.iterate(after, BATCH_ROWS) as IterableIterator<unknown[]>) {
      rows.push(row);
      for (const value of row) bytes += sizeOf(value);
      if (bytes >= BATCH_BYTES) break;
    }
    if (rows.length === 0) break;
    const values = columns.map((column, i) => rows.map((row) => toTarget(row[i + 1], column.type)));
    await inserted();
    insertingFrom = (rows[0] as unknown[])[0] as bigint;
    after = (rows.at(-1) as unknown[])[0] as bigint;
    if (partitioned) {
      for (const at of values[minTimestamp] as number[]) {
        const partition = partitionOf(Number(at));
        if (partitions.has(partition.from)) continue;
        await run(
          tx,
          `create table if not exists ${quoted(partition.name)} partition of event_blocks
           for values from (${partition.from}) to (${partition.to})`,
        );
        partitions.add(partition.from);
      }
    }
    inserting = run(tx, insert, values.map(arrayLiteral));
    // Its failure is told when it is awaited, before the next batch's insert or at the end.
    inserting.catch(() => {});
    insertingRows = rows.length;
    // Lets the statement leave for PostgreSQL before the next batch is read (synchronously).
    await new Promise((resolve) => setImmediate(resolve));
  }
  await inserted();
  progress.stop(`${copied.toLocaleString('en')} rows copied`);
  return copied;
}

/**
 * Sets each sequence of the target (the ids of things, events and event blocks) past the largest id
 * the SQLite store ever gave, copied or not: SQLite's AUTOINCREMENT never gives an id again, even
 * that of a deleted row, and neither will PostgreSQL then.
 */
async function setSequences(source: BetterSqlite3.Database, tx: Tx): Promise<void> {
  const sequences = await run<{ table: string; column: string; sequence: string }>(
    tx,
    `select c.relname as "table", a.attname as "column", pg_get_serial_sequence(quote_ident(c.relname), a.attname) as sequence
     from pg_class c join pg_attribute a on a.attrelid = c.oid
     where c.relnamespace = current_schema()::regnamespace and c.relname = any($1::text[])
       and a.attnum > 0 and not a.attisdropped
       and pg_get_serial_sequence(quote_ident(c.relname), a.attname) is not null`,
    [[...STORE_TABLES]],
  );
  const hasSequenceTable = source.prepare(`select 1 from sqlite_master where name = 'sqlite_sequence'`).get();
  for (const { table, column, sequence } of sequences) {
    const given = hasSequenceTable
      ? Number(source.prepare('select seq from sqlite_sequence where name = ?').pluck().get(table) ?? 0)
      : 0;
    const [largest] = await run<{ largest: number | null }>(
      tx,
      `select max(${quoted(column)}) as largest from ${quoted(table)}`,
    );
    const last = Math.max(given, Number(largest?.largest ?? 0));
    if (last > 0) await run(tx, 'select setval($1::regclass, $2::bigint, true)', [sequence, last]);
  }
}

/** Checks that every table holds on PostgreSQL as many rows as it does in the SQLite store. */
async function checkCounts(source: BetterSqlite3.Database, tx: Tx, copied: CopyStoreResult['rows']): Promise<void> {
  const differ: string[] = [];
  for (const { table, rows } of copied) {
    const inSource = Number(
      source
        .prepare(`select count(*) from ${quoted(table)}`)
        .pluck()
        .get(),
    );
    const [inTarget] = await run<{ n: number }>(tx, `select count(*) as n from ${quoted(table)}`);
    if (inSource !== rows || Number(inTarget?.n) !== rows) {
      differ.push(`${table}: ${inSource} in SQLite, ${rows} copied, ${inTarget?.n} in PostgreSQL`);
    }
  }
  if (differ.length > 0) {
    throw new Error(`copy-store: the row counts differ, so nothing was kept: ${differ.join('; ')}`);
  }
}

/** The summary printed at the end: rows per table, the total and the rate. */
export function copySummary(result: CopyStoreResult, from: string, to: string, schema: string | undefined): string[] {
  const total = result.rows.reduce((sum, r) => sum + r.rows, 0);
  const seconds = result.elapsedMs / 1000;
  const width = Math.max(...result.rows.map((r) => r.table.length));
  return [
    ...(result.migrated.length > 0
      ? [`Brought the PostgreSQL schema up to ${LATEST_MIGRATION} (${result.migrated.length} migration(s)).`]
      : []),
    `Copied ${total.toLocaleString('en')} rows of ${result.rows.length} tables from ${from} to ${redactUrl(to)}` +
      `${schema ? ` (schema ${schema})` : ''} in ${seconds.toFixed(1)} s (${Math.round(total / Math.max(seconds, 0.001)).toLocaleString('en')} rows/s):`,
    ...result.rows.map((r) => `  ${r.table.padEnd(width)}  ${r.rows.toLocaleString('en').padStart(12)}`),
    'Every table holds as many rows in PostgreSQL as in the SQLite store.',
  ];
}
