/**
 * Numbers written as text are decimal (docs/api.md, "Requests"): an optional minus, digits, an optional
 * fraction and an optional exponent (`12`, `-12.5`, `1e3`). Other notations that JavaScript's `Number`
 * reads (`0x10`, `0b1`, `0o7`, `Infinity`, text with spaces around it, empty text as 0) are not numbers
 * here, wherever text becomes a number: request parameters, imported rows, time bounds, device
 * timestamps and the command line.
 */
const DECIMAL = /^-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** The number that decimal text writes, or undefined when the text is not decimal. May be beyond finite (`1e999`). */
export function readDecimal(text: string): number | undefined {
  return DECIMAL.test(text) ? Number(text) : undefined;
}

/** How docs and error messages describe the rule. */
export const DECIMAL_EXAMPLES = '12, -12.5, 1e3';
