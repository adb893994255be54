/**
 * The expression language of group `thing_expression` and rule `condition` (docs/expressions.md):
 * parsed by hand into a tree and evaluated over plain data, never run as code.
 */
export type {
  ComparisonNode,
  ComparisonOperator,
  Expression,
  ListNode,
  LiteralNode,
  LiteralValue,
  LogicalNode,
  LogicalOperator,
  NameNode,
  NotNode,
} from './ast.ts';
export { compareValues, containsValue, valuesEqual } from './compare.ts';
export {
  isRuleConditionName,
  isThingFieldName,
  parseRuleCondition,
  parseThingExpression,
  readPath,
  ruleConditionLookup,
  THING_EXPRESSION_FIELDS,
  thingLookup,
} from './contexts.ts';
export { ExpressionError, ExpressionNameError, ExpressionSyntaxError } from './errors.ts';
export {
  type CompiledExpression,
  compileExpression,
  compileMatcher,
  evaluateExpression,
  type Matcher,
  matchesExpression,
  type NameLookup,
} from './evaluate.ts';
export { formatExpression } from './format.ts';
export { findUnknownName, formatName, referencedNames, validateNames } from './names.ts';
export { MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH, parseExpression } from './parser.ts';
