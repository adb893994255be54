/**
 * Recursive-descent parser. Precedence, loosest first: `or`, `and`, `not`, one comparison
 * (`== != > >= < <= contains in`), then values (literals, names, lists, parentheses).
 *
 *   expression := and ('or' and)*
 *   and        := not ('and' not)*
 *   not        := 'not' not | comparison
 *   comparison := value (operator value)?
 *   value      := number | '-' number | string | true | false | null | name | list | '(' expression ')'
 *   list       := '[' (value (',' value)*)? ']'
 */
import type { ComparisonOperator, Expression, ListNode, LogicalOperator } from './ast.ts';
import { ExpressionSyntaxError } from './errors.ts';
import { type Token, tokenize } from './lexer.ts';

/** Longer text is refused before it is read, so request bodies cannot make parsing expensive. */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Parentheses, lists and `not` each add a level; the cap keeps recursion far from the stack limit. */
export const MAX_NESTING_DEPTH = 64;

export function parseExpression(source: string): Expression {
  if (typeof source !== 'string') throw new ExpressionSyntaxError('expected the expression as text', 0);
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionSyntaxError('too long', MAX_EXPRESSION_LENGTH, `at most ${MAX_EXPRESSION_LENGTH} characters`);
  }
  return new Parser(tokenize(source)).parse();
}

const SYMBOL_OPERATORS: ReadonlySet<string> = new Set(['==', '!=', '>', '>=', '<', '<=']);

function comparisonOperatorOf(token: Token): ComparisonOperator | undefined {
  if (token.type === 'symbol' && SYMBOL_OPERATORS.has(token.symbol)) return token.symbol as ComparisonOperator;
  if (token.type === 'keyword' && (token.keyword === 'contains' || token.keyword === 'in')) return token.keyword;
  return undefined;
}

function describeToken(token: Token): string {
  const text = token.text.length > 40 ? `${token.text.slice(0, 37)}...` : token.text;
  switch (token.type) {
    case 'name':
      return `name '${text}'`;
    case 'string':
      return `string ${text}`;
    case 'number':
      return `number ${text}`;
    default:
      return `'${text}'`;
  }
}

/** "expected X" at the end of the text, "unexpected Y (expected X)" anywhere else. */
function expected(what: string, token: Token): ExpressionSyntaxError {
  if (token.type === 'end') return new ExpressionSyntaxError(`expected ${what}`, token.position, 'end of expression');
  return new ExpressionSyntaxError(`unexpected ${describeToken(token)}`, token.position, `expected ${what}`);
}

class Parser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  parse(): Expression {
    const expression = this.parseLogical('or');
    const next = this.peek();
    if (next.type === 'end') return expression;
    if (next.type === 'symbol' && next.symbol === ')') throw new ExpressionSyntaxError("unexpected ')'", next.position);
    throw new ExpressionSyntaxError(`unexpected ${describeToken(next)}`, next.position, "expected 'and' or 'or'");
  }

  // The token list always ends with an 'end' token, which is never consumed.
  private peek(): Token {
    return this.tokens[this.index]!;
  }

  private advance(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.index++;
    return token;
  }

  private isKeyword(keyword: string): boolean {
    const token = this.peek();
    return token.type === 'keyword' && token.keyword === keyword;
  }

  private isSymbol(symbol: string): boolean {
    const token = this.peek();
    return token.type === 'symbol' && token.symbol === symbol;
  }

  private enter(token: Token): void {
    this.depth++;
    if (this.depth > MAX_NESTING_DEPTH) {
      throw new ExpressionSyntaxError(
        'nested too deeply',
        token.position,
        `at most ${MAX_NESTING_DEPTH} levels of parentheses, lists and 'not'`,
      );
    }
  }

  private leave(): void {
    this.depth--;
  }

  /** `or` operands are `and` chains; `and` operands are `not` expressions. */
  private parseLogical(operator: LogicalOperator): Expression {
    const position = this.peek().position;
    const parseOperand = operator === 'or' ? () => this.parseLogical('and') : () => this.parseNot();
    const first = parseOperand();
    if (!this.isKeyword(operator)) return first;
    const operands = [first];
    while (this.isKeyword(operator)) {
      this.advance();
      operands.push(parseOperand());
    }
    return { kind: 'logical', operator, operands, position };
  }

  private parseNot(): Expression {
    if (!this.isKeyword('not')) return this.parseComparison();
    const token = this.advance();
    this.enter(token);
    const operand = this.parseNot();
    this.leave();
    return { kind: 'not', operand, position: token.position };
  }

  private parseComparison(): Expression {
    const position = this.peek().position;
    const left = this.parseValue();
    const operator = comparisonOperatorOf(this.peek());
    if (!operator) return left;
    this.advance();
    const right = this.parseValue();
    const after = this.peek();
    // `a < b < c` rarely means what it says; asking for `and` avoids a silent surprise.
    if (comparisonOperatorOf(after)) {
      throw new ExpressionSyntaxError(
        `unexpected ${describeToken(after)}`,
        after.position,
        "comparisons cannot be chained; join them with 'and'",
      );
    }
    return { kind: 'comparison', operator, left, right, position };
  }

  private parseValue(): Expression {
    const token = this.peek();
    switch (token.type) {
      case 'number':
        this.advance();
        return { kind: 'literal', value: token.value, position: token.position };
      case 'string':
        this.advance();
        return { kind: 'literal', value: token.value, position: token.position };
      case 'name':
        this.advance();
        return { kind: 'name', path: token.path, position: token.position };
      case 'keyword':
        if (token.keyword === 'true' || token.keyword === 'false' || token.keyword === 'null') {
          this.advance();
          const value = token.keyword === 'null' ? null : token.keyword === 'true';
          return { kind: 'literal', value, position: token.position };
        }
        break;
      case 'symbol':
        if (token.symbol === '-') return this.parseNegativeNumber();
        if (token.symbol === '(') return this.parseParenthesised();
        if (token.symbol === '[') return this.parseList();
        break;
      case 'end':
        break;
    }
    throw expected('a value', token);
  }

  private parseNegativeNumber(): Expression {
    const minus = this.advance();
    const number = this.peek();
    if (number.type !== 'number') throw expected("a number after '-'", number);
    this.advance();
    // `0 - x` rather than `-x` so that `-0` reads as plain 0.
    return { kind: 'literal', value: 0 - number.value, position: minus.position };
  }

  private parseParenthesised(): Expression {
    const open = this.advance();
    this.enter(open);
    const inner = this.parseLogical('or');
    if (!this.isSymbol(')')) throw expected("')'", this.peek());
    this.advance();
    this.leave();
    return inner;
  }

  private parseList(): ListNode {
    const open = this.advance();
    this.enter(open);
    const items: Expression[] = [];
    if (this.isSymbol(']')) {
      this.advance();
    } else {
      for (;;) {
        items.push(this.parseValue());
        if (this.isSymbol(',')) {
          this.advance();
          continue;
        }
        if (this.isSymbol(']')) {
          this.advance();
          break;
        }
        throw expected("',' or ']'", this.peek());
      }
    }
    this.leave();
    return { kind: 'list', items, position: open.position };
  }
}
