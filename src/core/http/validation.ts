/**
 * Turns the parameters of a request (query string, JSON body, path) into one validated object.
 * Path beats body beats query. Values are coerced by the declared type (CONTRACT 2).
 */
import type { TObject } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ApiError, type ErrorItem } from '../errors.ts';

const ajv = new Ajv({ coerceTypes: 'array', useDefaults: true, allErrors: true, strict: false });

export type ParamValidator = (input: Record<string, unknown>) => Record<string, unknown>;

type JsonSchema = { type?: unknown; properties?: Record<string, JsonSchema>; items?: JsonSchema };

/** Compiles a params schema once; the returned function coerces in place and throws ApiError 400. */
export function compileParams(schema: TObject): ParamValidator {
  const validate: ValidateFunction = ajv.compile(schema);
  const properties = (schema as JsonSchema).properties ?? {};
  const arrays = Object.keys(properties).filter((k) => properties[k]?.type === 'array');
  const objects = Object.keys(properties).filter((k) => properties[k]?.type === 'object');
  return (input) => {
    for (const name of arrays) {
      const value = input[name];
      // Query strings carry arrays as repeated keys or comma-separated text.
      if (typeof value === 'string') input[name] = value === '' ? [] : value.split(',').map((s) => s.trim());
    }
    for (const name of objects) {
      const value = input[name];
      if (typeof value === 'string') input[name] = parseJsonObject(name, value);
    }
    if (!validate(input)) throw new ApiError(400, toErrorItems(validate.errors ?? []));
    return input;
  };
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
  // A failed union reports every branch; keep one "invalid" for the union itself.
  const unionPaths = errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath);
  const items: ErrorItem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const inUnion = unionPaths.some((p) => error.instancePath.startsWith(p));
    if (inUnion && error.keyword !== 'anyOf') continue;
    const item = toErrorItem(error);
    const id = `${item.code}:${item.param}`;
    if (seen.has(id)) continue;
    seen.add(id);
    items.push(item);
  }
  return items;
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
    default:
      return { code: 'invalid', param: base, message: error.message ?? 'is invalid' };
  }
}
