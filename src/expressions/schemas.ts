import { Type } from '@sinclair/typebox';
import { CommonParams } from '../core/http/schema.ts';
import { MAX_EXPRESSION_LENGTH } from './parser.ts';

export const ValidateExpressionParams = Type.Object({
  ...CommonParams,
  expression: Type.String({ maxLength: MAX_EXPRESSION_LENGTH, description: 'the text to check' }),
  kind: Type.Union([Type.Literal('rule'), Type.Literal('group')], {
    description: 'rule = a rule condition (metrics and thing.<field>); group = a group thing_expression',
  }),
});

export const ValidExpression = Type.Object({
  valid: Type.Literal(true),
  metrics: Type.Optional(
    Type.Array(Type.String(), {
      description:
        'kind rule: the metric names the condition reads (its bare names, dotted paths as written), in order of first use',
    }),
  ),
});
