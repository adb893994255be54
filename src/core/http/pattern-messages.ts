/**
 * What a refusal of a JSON Schema `pattern` says (docs/api.md, "Errors"): the rule in words, such as
 * `must be 1-64 characters of A-Za-z0-9._-`, rather than the regular expression itself, which few
 * readers of a form or a client's log can read. A schema states its pattern with `namedPattern`.
 */
const messages = new Map<string, string>();

/** The pattern, registered so that a value it refuses is told `message`. */
export function namedPattern(pattern: string, message: string): string {
  messages.set(pattern, message);
  return pattern;
}

/** What a refusal of `pattern` says, when its schema named it. */
export const patternMessage = (pattern: string): string | undefined => messages.get(pattern);
