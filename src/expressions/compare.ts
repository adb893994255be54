/**
 * How values compare (docs/expressions.md). Data comes from users (metrics, user-defined properties as
 * text), so every function here accepts any value and answers false rather than throwing.
 */

// Plain decimal text only: `Number()` alone would also accept '', '0x1f' and 'Infinity'.
const NUMERIC_TEXT = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

// Lists inside lists are compared element by element; these bounds keep self-referencing or huge
// nested data from running away.
const MAX_LIST_DEPTH = 32;
const MAX_EQUALITY_STEPS = 10_000;

function isNullish(value: unknown): value is null | undefined {
  return value === null || value === undefined;
}

function isNumberLike(value: unknown): value is number | bigint {
  return typeof value === 'number' || typeof value === 'bigint';
}

/** A number, or the number written in a string of plain decimal text; otherwise undefined. */
export function numericValue(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') {
    const text = value.trim();
    if (!NUMERIC_TEXT.test(text)) return undefined;
    const number = Number(text);
    return Number.isFinite(number) ? number : undefined;
  }
  return undefined;
}

function booleanValue(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

/** The `==` of the language; `!=` is its negation. */
export function valuesEqual(left: unknown, right: unknown): boolean {
  return equal(left, right, { steps: MAX_EQUALITY_STEPS }, 0);
}

function equal(left: unknown, right: unknown, budget: { steps: number }, depth: number): boolean {
  if (--budget.steps < 0) return false;
  if (isNullish(left) || isNullish(right)) return isNullish(left) && isNullish(right);
  if (typeof left === 'string' && typeof right === 'string') return left === right;
  // User-defined properties are text: 'true' stands for true and '3' for 3 when compared with those.
  if (typeof left === 'boolean' || typeof right === 'boolean') {
    const a = booleanValue(left);
    return a !== undefined && a === booleanValue(right);
  }
  if (isNumberLike(left) || isNumberLike(right)) {
    const a = numericValue(left);
    return a !== undefined && a === numericValue(right);
  }
  if (Array.isArray(left) && Array.isArray(right)) {
    if (depth >= MAX_LIST_DEPTH || left.length !== right.length) return false;
    for (let i = 0; i < left.length; i++) {
      if (!equal(left[i], right[i], budget, depth + 1)) return false;
    }
    return true;
  }
  return false;
}

/**
 * Orders two values for `< <= > >=`: a negative number, 0 or a positive number, or undefined when
 * they cannot be ordered (the comparison is then false whichever way it is asked).
 */
export function compareValues(left: unknown, right: unknown): number | undefined {
  if (typeof left === 'string' && typeof right === 'string') return left < right ? -1 : left > right ? 1 : 0;
  const a = numericValue(left);
  const b = numericValue(right);
  if (a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b)) return undefined;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The `contains` of the language; `a in b` is `b contains a`. */
export function containsValue(container: unknown, item: unknown): boolean {
  if (Array.isArray(container)) {
    for (let i = 0; i < container.length; i++) {
      if (valuesEqual(container[i], item)) return true;
    }
    return false;
  }
  if (typeof container === 'string') {
    if (typeof item === 'string') return container.includes(item);
    if (typeof item === 'number' && Number.isFinite(item)) return container.includes(String(item));
  }
  return false;
}
