/**
 * Errors raised while reading an expression. Both kinds carry the offending 0-based offset; the HTTP
 * layer turns any ExpressionError into a 400 whose message is this one (docs/expressions.md, "Errors").
 */
export class ExpressionError extends Error {
  readonly position: number;

  constructor(message: string, position: number) {
    super(message);
    this.name = 'ExpressionError';
    this.position = position;
  }
}

/** The text is not a well-formed expression. */
export class ExpressionSyntaxError extends ExpressionError {
  /** Builds `<problem> at position <n>` plus an optional `(<detail>)`, so every message names the position. */
  constructor(problem: string, position: number, detail?: string) {
    super(`${problem} at position ${position}${detail ? ` (${detail})` : ''}`, position);
    this.name = 'ExpressionSyntaxError';
  }
}

/** The expression is well formed but names something its context does not offer. */
export class ExpressionNameError extends ExpressionError {
  readonly path: readonly string[];

  constructor(message: string, path: readonly string[], position: number) {
    super(message, position);
    this.name = 'ExpressionNameError';
    this.path = path;
  }
}
