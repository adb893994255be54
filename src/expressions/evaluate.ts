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
