/**
 * How answers become JSON text. A route with a response schema has its answers written by a
 * serialiser compiled from that schema (fast-json-stringify, Fastify's own): it knows every member's
 * name and type in advance and writes a list of twenty roles in about half the time of
 * JSON.stringify. Such a serialiser writes only what the schema declares, so the schemas must be
 * exact; with `checkAnswers` (THINGBASE_CHECK_ANSWERS, which the test suite sets) every answer is also
 * validated against its schema (types; members may be missing, as `field_list` allows) and compared
 * with JSON.stringify's text, and a difference fails the request with the route and what differed.
 */
import { isDeepStrictEqual } from 'node:util';
import type { TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import fastJsonStringify from 'fast-json-stringify';

export type AnswerWriter = (answer: unknown) => string;

const checker = new Ajv({ strict: false });

/**
 * The schema as the serialiser takes it: without `required`, since `field_list` leaves members out
 * of an answer, and without TypeBox's symbol keys.
 */
function serialiserSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(serialiserSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'required') continue;
    out[key] = key === 'properties' ? mapValues(value, serialiserSchema) : serialiserSchema(value);
  }
  return out;
}

const mapValues = (object: unknown, f: (value: unknown) => unknown) =>
  Object.fromEntries(Object.entries(object as Record<string, unknown>).map(([k, v]) => [k, f(v)]));

export function answerWriter(method: string, url: string, response: TSchema | undefined, check: boolean): AnswerWriter {
  if (!response) return JSON.stringify;
  const schema = serialiserSchema(response) as object;
  const write = fastJsonStringify(schema) as AnswerWriter;
  if (!check) return write;
  const validate = checker.compile(schema);
  return (answer) => {
    const plain = JSON.stringify(answer);
    const expected = JSON.parse(plain);
    if (!validate(expected)) {
      throw new Error(`${method} ${url} answered outside its response schema: ${checker.errorsText(validate.errors)}`);
    }
    const text = write(answer);
    if (!isDeepStrictEqual(JSON.parse(text), expected)) {
      throw new Error(`${method} ${url}: its response schema writes ${text.slice(0, 500)} for ${plain.slice(0, 500)}`);
    }
    return text;
  };
}
