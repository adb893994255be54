/**
 * What queries run on: the database or an open transaction. Apart from store.ts, so the modules the
 * store itself is built from (dialect.ts, the migrations) can name them without importing the store.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './tables.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Either the database or an open transaction: repositories accept both. */
export type Executor = Db | Tx;
