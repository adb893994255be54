/**
 * What PostgreSQL's statistics say a connection did, for tests of how statements read.
 */
import { sql } from 'kysely';
import type { Executor } from '../../src/store/store.ts';

/**
 * Rows of `events` the connection has fetched through indexes (bitmap scans included) and not yet
 * reported. PostgreSQL reports a connection's counts at most once a second, so these include earlier
 * transactions' on the same connection: take the difference of two readings in one transaction.
 */
export async function fetchedByIndexes(tx: Executor): Promise<number> {
  const { rows } = await sql<{ fetched: string }>`select idx_tup_fetch as fetched from pg_stat_xact_user_tables
    where relname = 'events' and schemaname = current_schema()`.execute(tx);
  return Number(rows[0]?.fetched ?? 0);
}
