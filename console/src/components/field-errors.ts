import { useState } from 'preact/hooks';
import { ApiFailure, answer, messageOf } from '../api/client.ts';
import { countOf } from '../format.ts';
import type { Action } from './use-action.ts';
import type { Submit } from './use-submit.ts';

/** One item of the API's error body (docs/api.md, "Errors"): `param` names the field (`user.password`). */
interface ErrorItem {
  code?: string;
  param?: string;
  message: string;
}

/** A refusal that keeps the API's error items, so that a form can say each next to its field. */
export class FieldFailure extends ApiFailure {
  constructor(
    failure: ApiFailure,
    readonly errors: ErrorItem[],
  ) {
    super(failure.message, failure.status);
  }
}

const itemsOf = (body: unknown): ErrorItem[] => {
  const errors = body && typeof body === 'object' && 'errors' in body ? body.errors : undefined;
  return Array.isArray(errors)
    ? errors.filter((e): e is ErrorItem => !!e && typeof e === 'object' && typeof e.message === 'string')
    : [];
};

/** A refusal the form makes itself about one of its fields (JSON that does not parse), said as the API's are. */
export const fieldRefusal = (param: string, message: string): FieldFailure =>
  new FieldFailure(new ApiFailure(`${param} ${message}`, 400), [{ code: 'invalid', param, message }]);

/** `answer`, but a refusal is a FieldFailure carrying the API's error items. */
export async function answerByField<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const result = await call;
  try {
    return await answer(Promise.resolve(result));
  } catch (failure) {
    throw failure instanceof ApiFailure ? new FieldFailure(failure, itemsOf(result.error)) : failure;
  }
}

/** JSON Schema's messages (docs/api.md, "Errors") as a person would say them. */
const PLAIN: [RegExp, (bound: string) => string][] = [
  [/^must NOT have fewer than (\d+) characters?$/, (n) => `Use at least ${countOf(Number(n), 'character')}`],
  [/^must NOT have more than (\d+) characters?$/, (n) => `Use at most ${countOf(Number(n), 'character')}`],
  [/^must be >= (\S+)$/, (n) => `Use ${n} or more`],
  [/^must be <= (\S+)$/, (n) => `Use ${n} or less`],
  [/^must match pattern /, () => 'This is not in the form expected'],
  [/^must be integer$/, () => 'Use a whole number'],
  [/^is required$/, () => 'Required'],
];

/**
 * The API's message about a field in plain words, without the field's name (its label says which):
 * `must NOT have fewer than 8 characters` is `Use at least 8 characters.`; others are kept, as a sentence.
 */
export function plainWords(message: string): string {
  const rule = PLAIN.find(([pattern]) => pattern.test(message));
  const plain = rule ? rule[1](message.match(rule[0])?.[1] ?? '') : message;
  const sentence = plain.charAt(0).toUpperCase() + plain.slice(1);
  return /[.!?)]$/.test(sentence) ? sentence : `${sentence}.`;
}

/** What a refusal says about each of `fields` (by `param`), and the rest, for next to the form's button. */
export function byField(
  failure: unknown,
  fields: readonly string[],
): { fields: Record<string, string>; rest?: string } {
  if (!(failure instanceof FieldFailure)) return { fields: {}, rest: messageOf(failure) };
  const said: Record<string, string> = {};
  const rest: string[] = [];
  for (const item of failure.errors) {
    if (item.param && fields.includes(item.param)) {
      const plain = plainWords(item.message);
      said[item.param] = said[item.param] ? `${said[item.param]} ${plain}` : plain;
    } else rest.push(item.param ? `${item.param} ${item.message}` : item.message);
  }
  // A refusal without items (a proxy's 502) still says something.
  if (failure.errors.length === 0) rest.push(failure.message);
  return rest.length > 0 ? { fields: said, rest: rest.join('; ') } : { fields: said };
}

/**
 * A form's request (as useAction) whose refusal is said field by field: `of(param)` is the API's message
 * about that field in plain words, for its Field's `error`; `error` holds the rest, for next to the
 * form's button. Send with `answerByField` so that the refusal keeps its items.
 */
export function useFieldAction(fields: readonly string[]): Action & { of: (param: string) => string | undefined } {
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState<{ fields: Record<string, string>; rest?: string }>({ fields: {} });
  return {
    busy,
    error: said.rest,
    of: (param) => said.fields[param],
    run: async (action) => {
      setBusy(true);
      setSaid({ fields: {} });
      try {
        await action();
        return true;
      } catch (failure) {
        setSaid(byField(failure, fields));
        return false;
      } finally {
        setBusy(false);
      }
    },
    clear: () => setSaid({ fields: {} }),
  };
}

/**
 * A form's sending (as useSubmit) whose refusal is said field by field, as useFieldAction's: `of(param)`
 * for each field's Field, `error` the rest, for next to the form's button.
 */
export function useFieldSubmit(
  fields: readonly string[],
  send: () => Promise<unknown>,
): Submit & { of: (param: string) => string | undefined } {
  const action = useFieldAction(fields);
  return {
    busy: action.busy,
    error: action.error,
    of: action.of,
    onSubmit: async (event: Event) => {
      event.preventDefault();
      await action.run(send);
    },
  };
}
