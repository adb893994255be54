/**
 * Queries built and compiled once per shape and SQL dialect, then run with new values. Building and
 * compiling a Kysely query costs several times more than running a small one, so the hot paths (the
 * token check behind every request, a device's key pair, the event writer's heartbeats, list pages)
 * skip it. A query is built once with placeholder values; where the placeholders land in the compiled
 * parameters is where later values go. Fixed-shape queries are declared with compiledQuery; queries
 * whose shape varies go through a QueryCache.
 */
import type { Compilable, CompiledQuery } from 'kysely';
import type { Executor } from './executor.ts';
import { runInTransaction } from './sqlite-dialect.ts';

/**
 * Runs a compiled query and answers its rows: in an open SQLite transaction at once on the store's
 * connection (sqlite-dialect.ts, runInTransaction), otherwise through the query layer.
 */
export async function runCompiled<R>(db: Executor, query: CompiledQuery): Promise<R[]> {
  return (runInTransaction<R>(db, query) ?? (await db.executeQuery<R>(query))).rows;
}

/** Values a query is built from: text, numbers and lists of them, each becoming SQL parameters. */
export type QueryValues = Record<string, string | number | readonly (string | number | null)[] | undefined>;

interface Compiled {
  query: CompiledQuery<unknown>;
  /** For each compiled parameter, the flattened value index it takes, or -1 for a constant. */
  slots: number[];
}

const MAX_SHAPES = 1000;
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL marks placeholders so no real value can look like one.
const PLACEHOLDER = /^\u0000v(\d+)\u0000$/;

const placeholderOf = (index: number): string => `\u0000v${index}\u0000`;

/** For each compiled parameter, the placeholder index it holds, or -1 for a constant. */
function slotsOf(query: CompiledQuery<unknown>): number[] {
  return query.parameters.map((p) => {
    const match = typeof p === 'string' ? PLACEHOLDER.exec(p) : null;
    return match ? Number(match[1]) : -1;
  });
}

/** The compiled query with `values` in the slots its placeholders held. */
function withValues<R>({ query, slots }: Compiled, values: readonly unknown[]): CompiledQuery<R> {
  const parameters = query.parameters.map((p, i) => (slots[i] === -1 ? p : values[slots[i] as number]));
  return { ...query, parameters } as CompiledQuery<R>;
}

/** The values flattened in a fixed order, and placeholders of the same structure. */
function flatten(values: QueryValues): { flat: (string | number | null)[]; placeholders: QueryValues; shape: string } {
  const flat: (string | number | null)[] = [];
  const placeholders: QueryValues = {};
  const shape: string[] = [];
  const placeholder = (value: string | number | null) => {
    flat.push(value);
    return placeholderOf(flat.length - 1);
  };
  for (const name of Object.keys(values).sort()) {
    const value = values[name];
    if (value === undefined) {
      shape.push(`${name}:-`);
    } else if (Array.isArray(value)) {
      placeholders[name] = value.map(placeholder);
      shape.push(`${name}:${value.length}`);
    } else {
      placeholders[name] = placeholder(value as string | number);
      shape.push(name);
    }
  }
  return { flat, placeholders, shape: shape.join(',') };
}

/**
 * Runs `build(values)`, compiling it only the first time a shape (which values are present, list
 * lengths, and `shapeKey` for anything else the SQL depends on) is seen on a dialect. `build` must
 * use the values only as query parameters, never compute with them.
 */
export class QueryCache {
  private readonly compiled = new Map<string, Compiled>();

  async execute<R>(
    db: Executor,
    shapeKey: string,
    values: QueryValues,
    build: (values: QueryValues) => Compilable<R>,
  ): Promise<R[]> {
    return runCompiled<R>(db, this.compile(db, shapeKey, values, build));
  }

  /** The query `build(values)` compiles to, compiled only the first time its shape is seen. */
  compile<R>(
    db: Executor,
    shapeKey: string,
    values: QueryValues,
    build: (values: QueryValues) => Compilable<R>,
  ): CompiledQuery<R> {
    const { flat, placeholders, shape } = flatten(values);
    const dialect = db.getExecutor().adapter.constructor.name;
    const key = `${dialect}|${shapeKey}|${shape}`;
    let entry = this.compiled.get(key);
    if (!entry) {
      const query = build(placeholders).compile() as CompiledQuery<unknown>;
      entry = { query, slots: slotsOf(query) };
      if (this.compiled.size >= MAX_SHAPES) this.compiled.clear();
      this.compiled.set(key, entry);
    }
    return withValues<R>(entry, flat);
  }
}

/** An argument of a compiled query: one value, always a parameter of the query. */
export type QueryArg = string | number | null;

/** A query of fixed shape declared once (compiledQuery): compiled on first use per SQL dialect. */
export interface CompiledQueryHandle<Args extends QueryArg[], R> {
  /** The query with these arguments, compiled only the first time on the executor's dialect. */
  compile(db: Executor, ...args: Args): CompiledQuery<R>;
  execute(db: Executor, ...args: Args): Promise<R[]>;
  executeTakeFirst(db: Executor, ...args: Args): Promise<R | undefined>;
}

/**
 * A query of fixed shape (the same arguments, each one value), for reads and writes made on every
 * request, message or event-writer transaction. Declare it once at module level: the handle is the
 * statement, compiled once per dialect the first time it runs there; there is no name to choose, so
 * two declarations never share a compiled statement. `build` receives placeholders in place of the
 * arguments and must use them only as query parameters, never compute with them; later arguments go
 * straight to the parameter slots the placeholders landed in, with no values to flatten or shape to
 * work out per run. Queries whose shape varies (lists of values, optional filters) use QueryCache.
 */
export function compiledQuery<Args extends QueryArg[], R>(
  build: (db: Executor, ...args: Args) => Compilable<R>,
): CompiledQueryHandle<Args, R> {
  const byDialect = new Map<string, Compiled>();
  const compile = (db: Executor, ...args: Args): CompiledQuery<R> => {
    const dialect = db.getExecutor().adapter.constructor.name;
    let entry = byDialect.get(dialect);
    if (!entry) {
      const placeholders = args.map((_, i) => placeholderOf(i)) as Args;
      const query = build(db, ...placeholders).compile() as CompiledQuery<unknown>;
      entry = { query, slots: slotsOf(query) };
      byDialect.set(dialect, entry);
    }
    return withValues<R>(entry, args);
  };
  const execute = (db: Executor, ...args: Args): Promise<R[]> => runCompiled<R>(db, compile(db, ...args));
  return {
    compile,
    execute,
    executeTakeFirst: async (db, ...args) => (await execute(db, ...args))[0],
  };
}
