/**
 * Turns the parameters of a request (query string, JSON body, path) into one validated object. Path
 * beats body beats query. Values are coerced by the declared type (docs/api.md, "Requests"). Two rules
 * hold for every parameter of every endpoint, over HTTP and MQTT alike (docs/api.md, "Bad input"):
 * numbers are finite and integers within +-(2^53 - 1), and no text holds a NUL character.
 */
import type { TObject } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { DECIMAL_EXAMPLES, readDecimal } from '../decimal.ts';
import { ApiError, type ErrorItem } from '../errors.ts';
import { patternMessage } from './pattern-messages.ts';

/** The keyword `refusingBooleans` adds: a JSON true or false is refused where a number (or null) is declared. */
const NOT_BOOLEAN = 'notBoolean';
/** The keywords `refusingNull` adds: a JSON null is refused where a number, or a boolean, is declared and null is not. */
const NOT_NULL = 'notNull';
const NOT_NULL_BOOLEAN = 'notNullBoolean';
const NOT_NULL_TEXT = 'notNullText';

// Text is coerced to the number or boolean declared, never a value to or from an array: a query string's
// arrays are split above, and a JSON body's `["x"]` where text is declared is a 400, not "x".
const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true, strict: false });
ajv.addKeyword({
  keyword: NOT_BOOLEAN,
  validate: (_: unknown, data: unknown) => typeof data !== 'boolean',
  errors: false,
});
for (const keyword of [NOT_NULL, NOT_NULL_BOOLEAN, NOT_NULL_TEXT]) {
  ajv.addKeyword({ keyword, validate: (_: unknown, data: unknown) => data !== null, errors: false });
}

/**
 * The keywords `readingDecimalText` adds: text where a number (or an integer) is declared is read as
 * decimal (core/decimal.ts) and replaced by the number, and refused when it is not decimal. Ajv's own
 * coercion reads text as `Number` does, so `"0x10"` would be 16 and `" 12"` 12. They run before
 * `const` and `enum`, which then see the number, and before the bounds of numbers.
 */
const DECIMAL_NUMBER = 'decimalNumber';
const DECIMAL_INTEGER = 'decimalInteger';
/** The same where the schema declares a boolean too: `true` and `false` text are read as booleans. */
const DECIMAL_NUMBER_OR_BOOLEAN = 'decimalNumberOrBoolean';
const DECIMAL_INTEGER_OR_BOOLEAN = 'decimalIntegerOrBoolean';
/** Where a keyword's value sits (Ajv's DataValidationCxt, which its main module does not export). */
type DataPlace = { parentData: Record<string | number, unknown>; parentDataProperty: string | number };
/** The keyword reading a number's or an integer's text, without and with a boolean declared beside it. */
const DECIMAL_KEYWORDS = {
  number: [DECIMAL_NUMBER, DECIMAL_NUMBER_OR_BOOLEAN],
  integer: [DECIMAL_INTEGER, DECIMAL_INTEGER_OR_BOOLEAN],
} as const;
for (const [keyword, integer, orBoolean] of [
  [DECIMAL_NUMBER, false, false],
  [DECIMAL_INTEGER, true, false],
  [DECIMAL_NUMBER_OR_BOOLEAN, false, true],
  [DECIMAL_INTEGER_OR_BOOLEAN, true, true],
] as const) {
  ajv.addKeyword({
    keyword,
    before: 'const',
    modifying: true,
    errors: false,
    validate: (_: unknown, data: unknown, _parent?: unknown, at?: DataPlace) => {
      if (typeof data !== 'string') return true;
      // Where a boolean is declared too (`idle_time_required`: true, false, 1 or 0), its text is one.
      if (orBoolean && (data === 'true' || data === 'false') && at !== undefined) {
        at.parentData[at.parentDataProperty] = data === 'true';
        return true;
      }
      const number = readDecimal(data);
      if (number === undefined || (integer && !Number.isInteger(number)) || at === undefined) return false;
      at.parentData[at.parentDataProperty] = number;
      return true;
    },
  });
}

/**
 * The keyword `readingNumbersAsText` adds: a JSON number where text is declared is read as its text,
 * as Ajv's coercion would, unless it is a whole number past 2^53 - 1, which JSON's reading has already
 * changed (`12345678901234567890` is 12345678901234567000 by then): that is refused, not stored as
 * digits the client did not send. The text then meets the schema's own checks (pattern, length).
 */
const EXACT_TEXT = 'exactText';
ajv.addKeyword({
  keyword: EXACT_TEXT,
  before: 'const',
  modifying: true,
  errors: false,
  validate: (_: unknown, data: unknown, _parent?: unknown, at?: DataPlace) => {
    if (typeof data !== 'number') return true;
    if (!Number.isFinite(data) || (Number.isInteger(data) && !Number.isSafeInteger(data)) || at === undefined) {
      return false;
    }
    at.parentData[at.parentDataProperty] = String(data);
    return true;
  },
});

export type ParamValidator = (input: Record<string, unknown>) => Record<string, unknown>;

type JsonSchema = { type?: unknown; properties?: Record<string, JsonSchema>; items?: JsonSchema; anyOf?: JsonSchema[] };

/**
 * Compiles a params schema once; the returned function coerces in place and throws ApiError 400, whose
 * errors name an array's items `a.0.b`, or `a[0].b` with `arrayIndexes` 'brackets'.
 */
export function compileParams(schema: TObject, arrayIndexes: 'dots' | 'brackets' = 'dots'): ParamValidator {
  const validate: ValidateFunction = ajv.compile(
    readingNumbersAsText(readingDecimalText(refusingBooleans(refusingNull(withNumberBounds(schema))))) as TObject,
  );
  const properties = (schema as JsonSchema).properties ?? {};
  const nullableNumbers = nullableNumberPaths(schema as JsonSchema, []);
  const arrays = Object.keys(properties).filter((k) => properties[k]?.type === 'array');
  const objectArrays = new Set(arrays.filter((k) => properties[k]?.items?.type === 'object'));
  const objects = Object.keys(properties).filter((k) => properties[k]?.type === 'object');
  const checked = (input: Record<string, unknown>) => {
    if (holdsBadValue(input, 0)) {
      throw new ApiError(400, [valueRefusal(input, []) ?? { code: 'invalid', message: 'is invalid' }]);
    }
    for (const name of arrays) {
      const value = input[name];
      // A query string carries an array of objects as repeated keys of JSON text, or the whole array as
      // JSON text; text holding JSON's commas is not split.
      if (objectArrays.has(name)) input[name] = objectsFromText(name, value);
      // Query strings carry arrays as repeated keys or comma-separated text.
      else if (typeof value === 'string') input[name] = value === '' ? [] : value.split(',').map((s) => s.trim());
    }
    for (const name of objects) {
      const value = input[name];
      if (typeof value === 'string') input[name] = parseJsonObject(name, value);
    }
    for (const path of nullableNumbers) {
      if (valueAt(input, path) === '')
        throw new ApiError(400, [refusalAt(path, 'must be a number or null, not empty text')]);
    }
    if (!validate(input)) throw new ApiError(400, toErrorItems(validate.errors ?? []));
    return input;
  };
  if (arrayIndexes === 'dots') return checked;
  return (input) => {
    try {
      return checked(input);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const errors = error.errors.map((e) => (e.param === undefined ? e : { ...e, param: withBrackets(e.param) }));
      throw new ApiError(error.status, errors);
    }
  };
}

/** A parameter's name with its array indexes in brackets: `widgets.0.thresholds.1.from` as `widgets[0].thresholds[1].from`. */
const withBrackets = (param: string): string => param.replace(/\.(\d+)(?=\.|$)/g, '[$1]');

/**
 * Where a schema declares a number or null (at any depth of objects): empty text is not decimal, but
 * where null is a branch of its own Ajv would read it as null, so `"retention_days": ""` would mean
 * "for ever"; it is refused instead.
 */
function nullableNumberPaths(schema: JsonSchema, path: string[]): string[][] {
  const paths: string[][] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const types = [property.type, ...(property.anyOf ?? []).map((branch) => branch.type)].flat();
    if (types.includes('null') && types.some((t) => t === 'integer' || t === 'number')) paths.push([...path, name]);
    if (property.type === 'object') paths.push(...nullableNumberPaths(property, [...path, name]));
  }
  return paths;
}

/** The value at a path of member names, if every step is an object. */
function valueAt(value: unknown, path: readonly string[]): unknown {
  let at = value;
  for (const name of path) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return at;
}

/** How deep parameters may nest: far more than any endpoint needs, and a bound on every walk over them. */
export const MAX_NESTING = 64;

/**
 * Whether any text in the parameters (values and member names, at any depth) holds a NUL character,
 * any number is not finite, or they nest deeper than MAX_NESTING. PostgreSQL refuses NUL in text where
 * SQLite keeps it; refused here, both stores answer the same (docs/api.md, "Bad input"). JSON's `1e999`
 * parses as Infinity, which a declared number's bound refuses but a value of no declared type (a metric)
 * would reach the store as null. This walk sees every value of every event a device sends, so it only
 * answers yes or no (about 130 ns per event of seven values); valueRefusal walks again to name the
 * parameter.
 */
function holdsBadValue(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return value.includes(NUL);
  if (typeof value === 'number') return !Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return false;
  if (depth >= MAX_NESTING) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (holdsBadValue(value[i], depth + 1)) return true;
    return false;
  }
  for (const name in value) {
    if (name.includes(NUL) || holdsBadValue((value as Record<string, unknown>)[name], depth + 1)) return true;
  }
  return false;
}

/** The error naming what holdsBadValue found and where; `path` is the way down to `value`. */
function valueRefusal(value: unknown, path: string[]): ErrorItem | undefined {
  if (typeof value === 'string') {
    return value.includes(NUL) ? refusalAt(path, 'must not contain a NUL character') : undefined;
  }
  if (typeof value === 'number') {
    return Number.isFinite(value)
      ? undefined
      : refusalAt(path, 'must be a number within the range of a double (about 1.8e308)');
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (path.length >= MAX_NESTING) return refusalAt(path, `nests deeper than ${MAX_NESTING} levels`);
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [String(i), item])
    : Object.entries(value);
  for (const [name, item] of entries) {
    if (name.includes(NUL)) return refusalAt(path, 'has a member name with a NUL character');
    const refusal = valueRefusal(item, [...path, name]);
    if (refusal) return refusal;
  }
  return undefined;
}

const refusalAt = (path: string[], message: string): ErrorItem =>
  path.length === 0 ? { code: 'invalid', message } : { code: 'invalid', param: path.join('.'), message };

const NUL = '\u0000';

/**
 * The schema with every number bounded where it declares no tighter bound: integers to what a double
 * holds exactly (beyond 2^53, "9007199254740993" would be read as ...992 and echoed so), other numbers
 * to finite values (JSON's 1e309 parses as Infinity). Neither reaches a store, which would refuse it
 * with a 500.
 */
function withNumberBounds(schema: unknown, integersOnly = false): unknown {
  return eachSchema(schema, (node, types) => {
    const limit = types.includes('integer')
      ? Number.MAX_SAFE_INTEGER
      : types.includes('number') && !integersOnly
        ? Number.MAX_VALUE
        : 0;
    if (limit > 0) {
      node.maximum ??= limit;
      node.minimum ??= -limit;
    }
  });
}

/**
 * The schema with JSON booleans refused where numbers or null are declared. Coercion reads numeric and
 * boolean text by the declared type (docs/api.md, "Requests"), but it would also read a JSON `true` as
 * the number 1 and `false` as 0 or null (`"retention_days": true` as one day). Each such schema also
 * admits booleans as a type, so that none is coerced, and then refuses them: text is still read as a
 * number (readingDecimalText), and numbers still become booleans where a boolean is declared
 * (`bi_directional: 1`).
 */
function refusingBooleans(schema: unknown): unknown {
  return eachSchema(schema, (node, types) => {
    const number = types.some((t) => t === 'integer' || t === 'number');
    // Where text is declared (and no number), true and false are read as text (docs/api.md), null or not.
    if (!types.includes('boolean') && (number || (types.includes('null') && !types.includes('string')))) {
      node.type = [...types, 'boolean'];
      node[NOT_BOOLEAN] = true;
    }
  });
}

/**
 * The schema with JSON null refused where a number or a boolean is declared and null is not: Ajv's
 * coercion would read it as 0 (`"time_range": {"from": null}` as 1970) or false (`"enabled": null`
 * would disable a rule). Each such schema admits null as a type, so that it is not coerced, and then
 * refuses it.
 */
function refusingNull(schema: unknown): unknown {
  return eachSchema(schema, (node, types) => {
    if (types.includes('null')) return;
    if (types.some((t) => t === 'integer' || t === 'number')) {
      node.type = [...types, 'null'];
      node[NOT_NULL] = true;
    } else if (types.includes('boolean')) {
      node.type = [...types, 'null'];
      node[NOT_NULL_BOOLEAN] = true;
    } else if (types.includes('string') && typeof node.minLength === 'number' && node.minLength >= 1) {
      // Read as empty text it would be refused anyway, told "fewer than 1 characters".
      node.type = [...types, 'null'];
      node[NOT_NULL_TEXT] = true;
    }
  });
}

/**
 * The schema with text read as decimal where numbers are declared (and text is not): each such schema
 * also admits text as a type, so that Ajv does not coerce it, and its DECIMAL_NUMBER or DECIMAL_INTEGER
 * keyword reads it. Empty text is not decimal either (nullableNumberPaths: nor is it null). Where a
 * boolean is declared as well, `true` and `false` text are read as booleans, as Ajv would without the
 * text type.
 */
function readingDecimalText(schema: unknown): unknown {
  return eachSchema(schema, (node, types) => {
    const integer = types.includes('integer');
    if (types.includes('string') || !(integer || types.includes('number'))) return;
    node.type = [...types, 'string'];
    // A boolean declared, not one admitted only to be refused (refusingBooleans).
    const orBoolean = types.includes('boolean') && node[NOT_BOOLEAN] !== true;
    node[DECIMAL_KEYWORDS[integer ? 'integer' : 'number'][orBoolean ? 1 : 0]] = true;
  });
}

/**
 * The schema with JSON numbers read as text where text is declared (and no number): each such schema
 * also admits numbers, so that Ajv does not coerce them, and its EXACT_TEXT keyword reads them.
 */
function readingNumbersAsText(schema: unknown): unknown {
  return eachSchema(schema, (node, types) => {
    if (!types.includes('string') || types.some((t) => t === 'number' || t === 'integer')) return;
    node.type = [...types, 'number'];
    node[EXACT_TEXT] = true;
  });
}

/**
 * A copy of a schema with `change` applied to each of its schemas (the whole and every subschema, the
 * innermost first), given the types each declares.
 */
function eachSchema(schema: unknown, change: (node: Record<string, unknown>, types: unknown[]) => void): unknown {
  if (Array.isArray(schema)) return schema.map((s) => eachSchema(s, change));
  if (schema === null || typeof schema !== 'object') return schema;
  const changed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DATA_KEYWORDS.has(key)) changed[key] = value;
    else if (SCHEMA_MAPS.has(key)) changed[key] = mapValues(value, (v) => eachSchema(v, change));
    else changed[key] = eachSchema(value, change);
  }
  change(changed, [(schema as JsonSchema).type].flat());
  return changed;
}

/**
 * The schema as the API documentation shows it: integers bounded as validation bounds them (the bound
 * of other numbers, finite, is said in docs/api.md, "Bad input", rather than as a huge maximum).
 */
export const documentedBounds = (schema: unknown): unknown => withNumberBounds(schema, true);

/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['default', 'enum', 'const', 'examples']);
/** Keywords whose values map names to schemas (a property may be named like a keyword). */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);

const mapValues = (object: unknown, f: (value: unknown) => unknown) =>
  Object.fromEntries(Object.entries(object as Record<string, unknown>).map(([k, v]) => [k, f(v)]));

/** Text that is JSON of an object or an array, as a query string carries one. */
const isJsonText = (item: unknown): item is string => typeof item === 'string' && /^\s*[[{]/.test(item);

/**
 * An array of objects as a query string carries it: JSON text of the array, or of one object, or
 * repeated keys each the JSON text of an object; anything else is left for the schema to refuse.
 */
function objectsFromText(name: string, value: unknown): unknown {
  if (isJsonText(value)) {
    const parsed = parseJsonObject(name, value);
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  if (!Array.isArray(value)) return value;
  // A JSON body's objects, as nearly every request sends them, are kept as they are, without a copy.
  if (!value.some((item) => typeof item === 'string')) return value;
  return value.map((item, i) => (isJsonText(item) ? parseJsonObject(`${name}.${i}`, item) : item));
}

function parseJsonObject(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, [{ code: 'invalid', param: name, message: 'must be a JSON object' }]);
  }
}

const pathToParam = (instancePath: string): string => instancePath.replace(/^\//, '').replace(/\//g, '.');

function joinParam(base: string, child: string): string {
  return base === '' ? child : `${base}.${child}`;
}

function toErrorItems(errors: ErrorObject[]): ErrorItem[] {
  const hidden = hiddenUnionErrors(errors);
  const items: ErrorItem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    if (hidden.has(error)) continue;
    const item = toErrorItem(error);
    const id = `${item.code}:${item.param}`;
    if (seen.has(id)) continue;
    seen.add(id);
    items.push(item);
  }
  return items;
}

/**
 * The errors a failed union (`anyOf`) stands for. Where the value has the shape of one branch alone,
 * that branch's errors are told, so that a pattern's or a length's words reach the caller; otherwise
 * one "invalid" for the union itself. A branch has the value's shape when the value is of its type
 * (text too long is told its length, not "the wrong type"); of several such, the one whose errors all
 * lie inside the value (`time_range` `{"last": "5 minutes"}` is the `last` form, whose pattern failed,
 * not the `from`/`to` form, which misses both). A member no branch has is told before all of that.
 */
function hiddenUnionErrors(errors: ErrorObject[]): Set<ErrorObject> {
  const hidden = new Set<ErrorObject>();
  for (const union of errors.filter((e) => e.keyword === 'anyOf')) {
    const at = union.instancePath;
    const inside = (e: ErrorObject) => e.instancePath.startsWith(`${at}/`);
    const branches = new Map<string, ErrorObject[]>();
    for (const error of errors) {
      const branch = /^\/(\d+)\//.exec(error.schemaPath.slice(union.schemaPath.length))?.[1];
      // The same schema checks every item of an array: only this union's value's errors are its own.
      if (!error.schemaPath.startsWith(union.schemaPath) || branch === undefined) continue;
      if (error.instancePath !== at && !inside(error)) continue;
      branches.set(branch, [...(branches.get(branch) ?? []), error]);
    }
    let fitting = [...branches.values()].filter(
      (branch) => !branch.some((e) => e.keyword === 'type' && e.instancePath === at),
    );
    // A member no branch knows is told as such (`unknown_field`), whatever else is wrong.
    const unknown = fitting.length > 1 ? unknownToAll(fitting, at) : [];
    if (unknown.length === 0 && fitting.length > 1) fitting = fitting.filter((branch) => branch.every(inside));
    const told = unknown.length > 0 ? unknown : fitting.length === 1 ? (fitting[0] ?? []) : [];
    if (told.length > 0) hidden.add(union);
    for (const branch of branches.values()) for (const error of branch) if (!told.includes(error)) hidden.add(error);
  }
  return hidden;
}

/**
 * The `additionalProperties` errors, of the first branch, for members of the value at `at` that every
 * branch calls unknown (`{"last": "1h", "foo": 1}`: `foo`), as opposed to a member only some branches
 * lack (`{"last": "1h", "from": 10}` mixes two forms, said as the union's error).
 */
function unknownToAll(branches: ErrorObject[][], at: string): ErrorObject[] {
  const unknownIn = (branch: ErrorObject[]) =>
    branch.filter((e) => e.keyword === 'additionalProperties' && e.instancePath === at);
  const [first, ...others] = branches;
  if (first === undefined) return [];
  return unknownIn(first).filter((error) =>
    others.every((branch) =>
      unknownIn(branch).some((e) => e.params.additionalProperty === error.params.additionalProperty),
    ),
  );
}

function toErrorItem(error: ErrorObject): ErrorItem {
  const base = pathToParam(error.instancePath);
  switch (error.keyword) {
    case 'required':
      return { code: 'required', param: joinParam(base, String(error.params.missingProperty)), message: 'is required' };
    case 'additionalProperties':
      return {
        code: 'unknown_field',
        param: joinParam(base, String(error.params.additionalProperty)),
        message: 'is not a known field',
      };
    case 'enum':
      return {
        code: 'invalid',
        param: base,
        message: `must be one of: ${(error.params.allowedValues as unknown[]).map((v) => String(v)).join(', ')}`,
      };
    case 'anyOf':
      return { code: 'invalid', param: base, message: 'has a value of the wrong type or outside its allowed set' };
    case 'pattern':
      return {
        code: 'invalid',
        param: base,
        message: patternMessage(String(error.params.pattern)) ?? error.message ?? 'is invalid',
      };
    case NOT_BOOLEAN:
      return { code: 'invalid', param: base, message: 'must be a number, not true or false' };
    case NOT_NULL:
      return { code: 'invalid', param: base, message: 'must be a number, not null' };
    case NOT_NULL_BOOLEAN:
      return { code: 'invalid', param: base, message: 'must be true or false, not null' };
    case NOT_NULL_TEXT:
      return { code: 'invalid', param: base, message: 'must be text, not null' };
    case DECIMAL_NUMBER:
      return { code: 'invalid', param: base, message: `must be a number in decimal notation (${DECIMAL_EXAMPLES})` };
    case EXACT_TEXT:
      return {
        code: 'invalid',
        param: base,
        message: 'must be text: a whole number past 9007199254740991 is not held exactly in JSON (send it as text)',
      };
    case DECIMAL_INTEGER:
      return { code: 'invalid', param: base, message: 'must be a whole number in decimal notation (12, -3, 1e3)' };
    case DECIMAL_INTEGER_OR_BOOLEAN:
      return { code: 'invalid', param: base, message: 'must be true, false or a whole number (1 or 0)' };
    case DECIMAL_NUMBER_OR_BOOLEAN:
      return { code: 'invalid', param: base, message: 'must be true, false or a number in decimal notation' };
    default:
      return { code: 'invalid', param: base, message: error.message ?? 'is invalid' };
  }
}
