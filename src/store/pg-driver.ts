/**
 * The PostgreSQL driver (`pg`), loaded by the first PostgreSQL store or change link of the process: a
 * server on SQLite never loads it, nor holds its code (a few MiB of each process's memory).
 */
import { createRequire } from 'node:module';
import type pgModule from 'pg';

type Pg = typeof pgModule;

const require = createRequire(import.meta.url);
let loaded: Pg | undefined;

export function pgDriver(): Pg {
  if (loaded) return loaded;
  const pg = require('pg') as Pg;
  // int8 (bigint, count(*)) arrives as text from pg; our integers fit in a double (epoch ms, counts).
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));
  loaded = pg;
  return pg;
}
