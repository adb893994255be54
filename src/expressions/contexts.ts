/**
 * The two places expressions are used (docs/expressions.md, "Names"): a group's `thing_expression` over
 * a thing's fields, and a rule's `condition` over an event's metrics plus `thing.<field>`.
 */
import type { Expression } from './ast.ts';
import type { NameLookup } from './evaluate.ts';
import { validateNames } from './names.ts';
import { parseExpression } from './parser.ts';

/** Thing fields an expression may name, besides `user_defined_properties.<name>`. */
export const THING_EXPRESSION_FIELDS = [
  'name',
  'description',
  'thing_key',
  'tags',
  'thing_template_key',
  'thing_template_name',
  'bi_directional',
  'alive',
] as const;

const USER_DEFINED_PROPERTIES = 'user_defined_properties';
const THING_PREFIX = 'thing';
const FIELD_SET: ReadonlySet<string> = new Set(THING_EXPRESSION_FIELDS);
const FIELD_LIST = `${THING_EXPRESSION_FIELDS.join(', ')}, ${USER_DEFINED_PROPERTIES}.<name>`;

/** Whether a path names a thing field: one of the listed fields, or a user-defined property. */
export function isThingFieldName(path: readonly string[]): boolean {
  const [first, ...rest] = path;
  if (first === undefined) return false;
  if (first === USER_DEFINED_PROPERTIES) return rest.length > 0;
  return rest.length === 0 && FIELD_SET.has(first);
}

/** In a rule condition, whether a name is `thing.<field>` rather than a metric path. */
export function isThingFieldReference(path: readonly string[]): boolean {
  return path[0] === THING_PREFIX;
}

/** In a rule condition `thing.<field>` is a thing field and every other name a metric path. */
export function isRuleConditionName(path: readonly string[]): boolean {
  if (isThingFieldReference(path)) return isThingFieldName(path.slice(1));
  return path.length > 0;
}

/** Parses a group's `thing_expression` and checks its names; throws ExpressionError (a 400). */
export function parseThingExpression(source: string): Expression {
  const expr = parseExpression(source);
  validateNames(expr, isThingFieldName, `a group expression may use ${FIELD_LIST}`);
  return expr;
}

/** Parses a rule's `condition` and checks its names; throws ExpressionError (a 400). */
export function parseRuleCondition(source: string): Expression {
  const expr = parseExpression(source);
  validateNames(expr, isRuleConditionName, `thing fields are thing.${FIELD_LIST.replaceAll(', ', ', thing.')}`);
  return expr;
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

/**
 * Follows a path through nested objects. Only own properties are read, so names such as
 * `constructor` or `__proto__` find nothing rather than the object's machinery.
 */
export function readPath(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    if (Array.isArray(value) && !ARRAY_INDEX.test(segment)) return undefined;
    if (!Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** Lookup for a group expression: names are read from the thing as the API presents it. */
export function thingLookup(thing: unknown): NameLookup {
  return (path) => readPath(thing, path);
}

/** Lookup for a rule condition: `thing.<field>` from the thing, any other name from the event's data. */
export function ruleConditionLookup(data: unknown, thing: unknown): NameLookup {
  // A plain metric name (`temperature`), the commonest, read without walking a path: `readPath`'s rules
  // for one segment of an object that is not an array. A name of one segment is never `thing`.
  const plain = data !== null && typeof data === 'object' && !Array.isArray(data) ? data : undefined;
  return (path) => {
    if (path.length === 1 && plain !== undefined) {
      const name = path[0] as string;
      return Object.hasOwn(plain, name) ? (plain as Record<string, unknown>)[name] : undefined;
    }
    return path[0] === THING_PREFIX ? readPath(thing, path.slice(1)) : readPath(data, path);
  };
}
