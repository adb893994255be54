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
  /** A valid rule condition's metrics (dotted paths), in order of first use; else none. */
  metrics: string[];
}

const unchecked: ExpressionCheck = { message: undefined, valid: false, metrics: [] };

/**
 * Checks an expression through the API as it is typed (`POST /api/v3/expressions/validate`,
 * docs/expressions.md), 200 ms after the last keystroke, without saving anything: a rule's condition
 * (`rule`) or a group's expression (`group`).
 */
export function useExpressionCheck(expression: string, kind: 'rule' | 'group'): ExpressionCheck {
  const settled = useDebounced(expression, 200);
  const [state, setState] = useState<ExpressionCheck>(unchecked);
  useEffect(() => {
    if (settled.trim() === '') {
      setState(unchecked);
      return;
    }
    let current = true;
    answerByField(api.POST('/api/v3/expressions/validate', { body: { expression: settled, kind } })).then(
      (answer) => current && setState({ message: undefined, valid: true, metrics: answer.metrics ?? [] }),
      (failure) => current && setState({ ...unchecked, message: aboutExpression(failure) }),
    );
    return () => {
      current = false;
    };
  }, [settled, kind]);
  return state;
}
