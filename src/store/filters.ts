/** Filters many repositories share. */
import type { ExpressionBuilder } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: applies to any table with an organisation_key column.
type AnyTables = any;

/**
 * Rows of the given organisations. One organisation (the usual case) is an equality, which SQLite
 * plans better than `in (?)` when the index also serves the sort.
 */
export const inOrganisations =
  (keys: readonly string[], column = 'organisation_key') =>
  (eb: ExpressionBuilder<AnyTables, AnyTables>) =>
    keys.length === 1 ? eb(column, '=', keys[0]) : eb(column, 'in', keys);
