/**
 * Evaluates a parsed expression against data reached through a lookup. Only values flow through here;
 * nothing the expression says can call code, and no data can make evaluation throw.
 */
import type { ComparisonOperator, Expression } from './ast.ts';
import { compareValues, containsValue, valuesEqual } from './compare.ts';

/** Resolves a dotted name (as its segments) to a value; undefined means the name is missing. */
export type NameLookup = (path: readonly string[]) => unknown;

export function evaluateExpression(expr: Expression, lookup: NameLookup): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'name':
      return lookup(expr.path) ?? null;
    case 'list':
      return expr.items.map((item) => evaluateExpression(item, lookup));
    case 'not':
      // Only `true` counts as true, as in `and`/`or`, so `not x` is the exact opposite of `x` matching.
      return evaluateExpression(expr.operand, lookup) !== true;
    case 'logical':
      if (expr.operator === 'and') {
        for (const operand of expr.operands) if (evaluateExpression(operand, lookup) !== true) return false;
        return true;
      }
      for (const operand of expr.operands) if (evaluateExpression(operand, lookup) === true) return true;
      return false;
    case 'comparison':
      return compare(expr.operator, evaluateExpression(expr.left, lookup), evaluateExpression(expr.right, lookup));
  }
}

/** Whether the data matches: the expression's value is exactly `true`. */
export function matchesExpression(expr: Expression, lookup: NameLookup): boolean {
  return evaluateExpression(expr, lookup) === true;
}

/** An expression turned into a function of its lookup: same values as `evaluateExpression`. */
export type CompiledExpression = (lookup: NameLookup) => unknown;

/**
 * Turns an expression into nested closures, one per node, decided once: evaluating a rule condition
 * on every ingested event, or a group's expression on every thing, then costs no walk over the tree's
 * kinds. What the server runs. Same values as `evaluateExpression`, which stays the reference the unit
 * tests compare it with over random trees and data.
 */
export function compileExpression(expr: Expression): CompiledExpression {
  switch (expr.kind) {
    case 'literal': {
      const value = expr.value;
      return () => value;
    }
    case 'name': {
      const path = expr.path;
      return (lookup) => lookup(path) ?? null;
    }
    case 'list': {
      const items = expr.items.map(compileExpression);
      return (lookup) => items.map((item) => item(lookup));
    }
    case 'not': {
      const operand = compileExpression(expr.operand);
      return (lookup) => operand(lookup) !== true;
    }
    case 'logical': {
      const operands = expr.operands.map(compileExpression);
      if (expr.operator === 'and') {
        return (lookup) => {
          for (const operand of operands) if (operand(lookup) !== true) return false;
          return true;
        };
      }
      return (lookup) => {
        for (const operand of operands) if (operand(lookup) === true) return true;
        return false;
      };
    }
    case 'comparison': {
      const { operator } = expr;
      const left = compileExpression(expr.left);
      if (expr.right.kind === 'literal' && typeof expr.right.value === 'number') {
        const ordered = orderedAgainstNumber(operator, left, expr.right.value);
        if (ordered) return ordered;
      }
      const right = compileExpression(expr.right);
      return (lookup) => compare(operator, left(lookup), right(lookup));
    }
  }
}

/**
 * `x > 80` and its kin, the commonest rule condition, compared directly when `x` is a number (as
 * `compare` would: a NaN orders with nothing) and through `compare` otherwise.
 */
function orderedAgainstNumber(
  operator: ComparisonOperator,
  left: CompiledExpression,
  bound: number,
): CompiledExpression | undefined {
  const other = (value: unknown) => compare(operator, value, bound);
  switch (operator) {
    case '>':
      return (lookup) => {
        const value = left(lookup);
        return typeof value === 'number' ? value > bound : other(value);
      };
    case '>=':
      return (lookup) => {
        const value = left(lookup);
        return typeof value === 'number' ? value >= bound : other(value);
      };
    case '<':
      return (lookup) => {
        const value = left(lookup);
        return typeof value === 'number' ? value < bound : other(value);
      };
    case '<=':
      return (lookup) => {
        const value = left(lookup);
        return typeof value === 'number' ? value <= bound : other(value);
      };
    default:
      return undefined;
  }
}

/** Whether data matches an expression: its value is exactly `true`. */
export type Matcher = (lookup: NameLookup) => boolean;

/** The expression compiled (as `compileExpression`) into a matcher. */
export function compileMatcher(expr: Expression): Matcher {
  const compiled = compileExpression(expr);
  return (lookup) => compiled(lookup) === true;
}

function compare(operator: ComparisonOperator, left: unknown, right: unknown): boolean {
  switch (operator) {
    case '==':
      return valuesEqual(left, right);
    case '!=':
      return !valuesEqual(left, right);
    case 'contains':
      return containsValue(left, right);
    case 'in':
      return containsValue(right, left);
    case '>':
      return (compareValues(left, right) ?? Number.NaN) > 0;
    case '>=':
      return (compareValues(left, right) ?? Number.NaN) >= 0;
    case '<':
      return (compareValues(left, right) ?? Number.NaN) < 0;
    case '<=':
      return (compareValues(left, right) ?? Number.NaN) <= 0;
  }
}
