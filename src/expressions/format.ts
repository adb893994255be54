/**
 * Writes a syntax tree back as expression text, with parentheses only where precedence needs them.
 * Parsing the result gives the same tree, so stored expressions can be shown in one canonical form.
 */
import type { Expression } from './ast.ts';
import { formatName } from './names.ts';
import { formatString } from './strings.ts';

// Binding strength, loosest first; a child weaker than its place requires is parenthesised.
const OR = 1;
const AND = 2;
const NOT = 3;
const COMPARISON = 4;
const VALUE = 5;

function strengthOf(expr: Expression): number {
  switch (expr.kind) {
    case 'logical':
      return expr.operator === 'or' ? OR : AND;
    case 'not':
      return NOT;
    case 'comparison':
      return COMPARISON;
    default:
      return VALUE;
  }
}

export function formatExpression(expr: Expression): string {
  return format(expr, OR);
}

function format(expr: Expression, required: number): string {
  const text = formatBare(expr);
  return strengthOf(expr) < required ? `(${text})` : text;
}

function formatBare(expr: Expression): string {
  switch (expr.kind) {
    case 'literal': {
      const { value } = expr;
      if (value === null) return 'null';
      if (typeof value === 'string') return formatString(value);
      return String(value);
    }
    case 'name':
      return formatName(expr.path);
    case 'list':
      return `[${expr.items.map((item) => format(item, VALUE)).join(', ')}]`;
    case 'not':
      // `not (a == b)` reads better than the equivalent `not a == b`.
      return `not ${expr.operand.kind === 'not' ? formatBare(expr.operand) : format(expr.operand, VALUE)}`;
    case 'logical': {
      // Demanding one level tighter also parenthesises a same-operator child, so `(a or b) or c` keeps its shape.
      const operandStrength = expr.operator === 'or' ? AND : NOT;
      return expr.operands.map((operand) => format(operand, operandStrength)).join(` ${expr.operator} `);
    }
    case 'comparison':
      return `${format(expr.left, VALUE)} ${expr.operator} ${format(expr.right, VALUE)}`;
  }
}
