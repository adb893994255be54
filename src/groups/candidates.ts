/**
 * Narrows the things a dynamic group's expression is evaluated on. The SQL condition built here is
 * implied by the expression: every thing the expression matches also meets it, so the store can drop
 * the rest and the exact evaluation (expressions/evaluate.ts) still decides. Only terms whose SQL
 * meaning is exactly the expression's are translated: equality of a text field with a text literal,
 * (the template's name too) and `tags contains` a text literal. The SQL refers to `things` as `t`. Anything else counts as "maybe" and is left to the evaluation.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Expression } from '../expressions/index.ts';
import { type Engine, jsonArrayHasText, jsonMemberText } from '../store/dialect.ts';

const TEXT_COLUMNS: Record<string, string> = {
  name: 't.name',
  description: 't.description',
  thing_key: 't.thing_key',
  thing_template_key: 't.thing_template_key',
};

function textEquals(engine: Engine, path: readonly string[], value: string): RawBuilder<boolean> | undefined {
  if (path.length === 1 && path[0] === 'thing_template_name') {
    return sql<boolean>`t.thing_template_key in (select thing_template_key from thing_templates where name = ${value})`;
  }
  const column = textField(engine, path);
  return column ? sql<boolean>`${column} = ${value}` : undefined;
}

function textField(engine: Engine, path: readonly string[]): RawBuilder<string | null> | undefined {
  const [first, second] = path;
  if (path.length === 1 && first !== undefined && TEXT_COLUMNS[first]) return sql`${sql.ref(TEXT_COLUMNS[first])}`;
  if (path.length === 2 && first === 'user_defined_properties' && second !== undefined) {
    return jsonMemberText(engine, 't.user_defined_properties', second);
  }
  return undefined;
}

const textLiteral = (expr: Expression): string | undefined =>
  expr.kind === 'literal' && typeof expr.value === 'string' ? expr.value : undefined;

const isTags = (expr: Expression): boolean => expr.kind === 'name' && expr.path.length === 1 && expr.path[0] === 'tags';

/** A condition every match meets, or undefined when nothing can be said in SQL. */
export function candidateCondition(expr: Expression, engine: Engine): RawBuilder<boolean> | undefined {
  switch (expr.kind) {
    case 'logical': {
      const parts = expr.operands.map((operand) => candidateCondition(operand, engine));
      if (expr.operator === 'and') {
        const known = parts.filter((p): p is RawBuilder<boolean> => p !== undefined);
        return known.length === 0 ? undefined : sql<boolean>`(${sql.join(known, sql` and `)})`;
      }
      if (parts.some((p) => p === undefined)) return undefined;
      return sql<boolean>`(${sql.join(parts as RawBuilder<boolean>[], sql` or `)})`;
    }
    case 'comparison': {
      const { operator, left, right } = expr;
      if (operator === '==') {
        for (const [field, literal] of [
          [left, right],
          [right, left],
        ] as const) {
          const value = textLiteral(literal);
          const condition =
            value !== undefined && field.kind === 'name' ? textEquals(engine, field.path, value) : undefined;
          if (condition) return condition;
        }
        return undefined;
      }
      if (operator === 'contains' && isTags(left)) {
        const value = textLiteral(right);
        return value === undefined ? undefined : jsonArrayHasText(engine, 't.tags', value);
      }
      if (operator === 'in' && isTags(right)) {
        const value = textLiteral(left);
        return value === undefined ? undefined : jsonArrayHasText(engine, 't.tags', value);
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
