/**
 * Junk for property tests of bad input (fast-check arbitraries): text, numbers and JSON of every odd
 * kind, and values of roughly a JSON schema's shape with junk mixed in, so that enough of it passes a
 * schema check to reach the code behind it.
 */
import fc from 'fast-check';

/** The part of a JSON schema (the OpenAPI document's, or a TypeBox schema) the junk follows. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  enum?: unknown[];
}

export const hugeNumberText = fc.constantFrom(
  '99999999999999999999',
  '1e309',
  '-1e309',
  '9223372036854775807',
  '9007199254740993',
  '-9007199254740993',
  '-0',
  '1.5',
  '-1',
  '0',
);

export const junkText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  hugeNumberText,
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '../',
    '../../etc/passwd',
    '%00',
    '%zz',
    '\ud800',
    '☃ ünïcödé 𝄞',
    "' or 1=1 --",
    '{"a":1}',
    '[1,2]',
    'true',
    'null',
    'NaN',
    'Infinity',
    'k'.repeat(300),
  ),
);

export const junkNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1.5, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER),
);

/** Any JSON value, nested a little. */
export const junkJson: fc.Arbitrary<unknown> = fc.anything({
  maxDepth: 3,
  maxKeys: 4,
  values: [junkText, junkNumber, fc.boolean(), fc.constant(null)],
});

/** A value of roughly the schema's shape, or junk: enough of it passes validation to reach the handler. */
export function valueFor(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 3) return junkJson;
  const types = [schema.type ?? []].flat();
  const shaped: fc.Arbitrary<unknown>[] = [];
  if (schema.enum) shaped.push(fc.constantFrom(...schema.enum));
  if (types.includes('object') && schema.properties) {
    const properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, child]) => [name, valueFor(child, depth + 1)]),
    );
    shaped.push(fc.record(properties, { requiredKeys: [] }));
  }
  if (types.includes('array')) shaped.push(fc.array(valueFor(schema.items, depth + 1), { maxLength: 3 }));
  if (types.includes('integer') || types.includes('number')) shaped.push(junkNumber);
  if (types.includes('string')) shaped.push(junkText);
  if (types.includes('boolean')) shaped.push(fc.boolean());
  return fc.oneof({ weight: 3, arbitrary: fc.oneof(...(shaped.length > 0 ? shaped : [junkJson])) }, junkJson);
}
