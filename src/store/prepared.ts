/**
 * A query built and compiled once per SQL dialect, then run with new parameter values. Building and
 * compiling a Kysely query costs more than running a small one, so the hottest queries (the token
 * check behind every request) skip it. The query is built with placeholder values, and the positions
 * where they land in the compiled parameters are where later values go.
 */
import type { Compilable, CompiledQuery } from 'kysely';
import type { Executor } from './store.ts';

interface Compiled<R> {
  query: CompiledQuery<R>;
  slots: number[];
}

export class PreparedQuery<Args extends unknown[], R> {
  private readonly byDialect = new Map<unknown, Compiled<R>>();

  constructor(private readonly build: (db: Executor, ...args: Args) => Compilable<R>) {}

  async execute(db: Executor, ...values: Args): Promise<R[]> {
    const compiled = this.compiledFor(db, values.length);
    const parameters = [...compiled.query.parameters];
    compiled.slots.forEach((slot, i) => {
      parameters[slot] = values[i];
    });
    const result = await db.executeQuery<R>({ ...compiled.query, parameters });
    return result.rows;
  }

  async executeTakeFirst(db: Executor, ...values: Args): Promise<R | undefined> {
    return (await this.execute(db, ...values))[0];
  }

  private compiledFor(db: Executor, arity: number): Compiled<R> {
    const dialect = db.getExecutor().adapter.constructor;
    let compiled = this.byDialect.get(dialect);
    if (!compiled) {
      const placeholders = Array.from({ length: arity }, (_, i) => `\u0000placeholder ${i}\u0000`);
      const query = this.build(db, ...(placeholders as Args)).compile();
      const slots = placeholders.map((p) => query.parameters.indexOf(p));
      if (slots.some((slot) => slot < 0) || query.parameters.length !== arity) {
        throw new Error('a prepared query must use each argument exactly once, as a parameter');
      }
      compiled = { query, slots };
      this.byDialect.set(dialect, compiled);
    }
    return compiled;
  }
}
