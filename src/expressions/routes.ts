/**
 * `POST /api/v3/expressions/validate`: lets editors (the console's rule form) check an expression as it
 * is typed, with the same messages a create or update would answer (docs/expressions.md, "Errors").
 */
import { invalidParam } from '../core/errors.ts';
import { type AnyRoute, defineRoute } from '../core/http/route.ts';
import { isThingFieldReference, parseRuleCondition, parseThingExpression } from './contexts.ts';
import { ExpressionError } from './errors.ts';
import { referencedNames } from './names.ts';
import { ValidateExpressionParams, ValidExpression } from './schemas.ts';

export function expressionRoutes(): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v3/expressions/validate',
      tags: ['Expressions'],
      summary: 'Check a rule condition or group expression',
      description:
        'Answers {"valid": true} (for a rule condition with the metrics it reads), or a 400 whose message names the position of the first problem.',
      access: { kind: 'signed_in' },
      params: ValidateExpressionParams,
      response: ValidExpression,
      handler: ({ params }) => {
        try {
          if (params.kind === 'group') {
            parseThingExpression(params.expression);
            return { valid: true as const };
          }
          // The metrics, so that an editor can say which of them the rule's things do not have.
          const metrics = referencedNames(parseRuleCondition(params.expression))
            .filter((path) => !isThingFieldReference(path))
            .map((path) => path.join('.'));
          return { valid: true as const, metrics };
        } catch (error) {
          if (error instanceof ExpressionError) throw invalidParam('expression', error.message);
          throw error;
        }
      },
    }),
  ];
}
