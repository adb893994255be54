import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api/client.ts';
import { answerByField, FieldFailure, plainWords } from './field-errors.ts';
import { useDebounced } from './use-load.ts';

/**
 * What the API said about the expression itself, as a sentence (`Expected a value at position 10.`),
 * without the field's name its whole message starts with: the check is shown under that field.
 */
const aboutExpression = (failure: unknown): string => {
  const item = failure instanceof FieldFailure ? failure.errors.find((e) => e.param === 'expression') : undefined;
  return item ? plainWords(item.message) : messageOf(failure);
};

export interface ExpressionCheck {
  /** The API's message about the expression, or undefined while it is valid, empty or being checked. */
  message: string | undefined;
  valid: boolean;
}

/**
 * Checks an expression through the API as it is typed (`POST /api/v3/expressions/validate`,
 * docs/expressions.md), 200 ms after the last keystroke, without saving anything: a rule's condition
 * (`rule`) or a group's expression (`group`).
 */
export function useExpressionCheck(expression: string, kind: 'rule' | 'group'): ExpressionCheck {
  const settled = useDebounced(expression, 200);
  const [state, setState] = useState<ExpressionCheck>({ message: undefined, valid: false });
  useEffect(() => {
    if (settled.trim() === '') {
      setState({ message: undefined, valid: false });
      return;
    }
    let current = true;
    answerByField(api.POST('/api/v3/expressions/validate', { body: { expression: settled, kind } })).then(
      () => current && setState({ message: undefined, valid: true }),
      (failure) => current && setState({ message: aboutExpression(failure), valid: false }),
    );
    return () => {
      current = false;
    };
  }, [settled, kind]);
  return state;
}
