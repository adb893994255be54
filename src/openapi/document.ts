/**
 * Finishes the OpenAPI document the routes describe (docs/api.md, "The API description"), in one place
 * rather than in every route: each operation gets an operation id made from its method and path, an
 * example request (examples.ts, else one made from its schema), and its 4xx answers in the error shape;
 * the error body and every resource answered alone (`{"thing": {...}}`) become component schemas that
 * the operations refer to.
 */
import { RATE_LIMIT_EXEMPT } from '../core/http/route.ts';
import { exampleObject } from './example-values.ts';
import { EXAMPLES } from './examples.ts';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON
type Json = Record<string, any>;

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

/** `GET /api/v3/things/{thing_key}` -> `getThingsByThingKey`; `/api/v2/...` keeps its `V2`. */
export function operationId(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v3\//, '/')
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => {
      const parameter = /^\{(.+)\}$/.exec(segment);
      return parameter ? `by_${parameter[1]}` : segment;
    })
    .join('_')
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== '');
  return method.toLowerCase() + words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
}

export const ERROR_SCHEMA = {
  type: 'object',
  description: 'every failure answers this body (docs/api.md, "Errors")',
  required: ['success', 'message', 'errors'],
  properties: {
    success: { const: false },
    message: { type: 'string', description: 'all errors in one sentence' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: {
            type: 'string',
            description:
              'required, invalid, unknown_field, not_found, unauthorized, forbidden, conflict, too_large, ...',
          },
          message: { type: 'string' },
          param: { type: 'string', description: 'the parameter concerned, where there is one' },
        },
      },
    },
  },
  example: {
    success: false,
    message: 'rule_key is required',
    errors: [{ code: 'required', param: 'rule_key', message: 'is required' }],
  },
};

const ERROR_ANSWERS: Record<string, string> = {
  '400': 'a parameter is missing, malformed or outside its allowed values',
  '401': 'no valid X-Auth-Token (or device signature)',
  '403': "the role lacks this operation's permission",
  '404': 'no such resource in the organisations the caller can see',
};

/** The example request of an operation: the one written for it, else its required parameters. */
export function exampleOf(id: string, parameterSchema: Json): Record<string, unknown> {
  const written = EXAMPLES[id];
  if (written) return written;
  const example = exampleObject(parameterSchema);
  if ('page' in parameterSchema.properties) Object.assign(example, { page: 1, per: 10 });
  if (Object.keys(example).length === 0) example.pretty = true;
  return example;
}

/** The operation's parameters as one object schema (query and path, or the body's). */
export function parameterSchema(operation: Json): Json {
  const body = operation.requestBody?.content?.['application/json']?.schema;
  const properties: Json = { ...(body?.properties ?? {}) };
  const required: string[] = [...(body?.required ?? [])];
  for (const parameter of operation.parameters ?? []) {
    properties[parameter.name] = parameter.schema;
    if (parameter.required) required.push(parameter.name);
  }
  return { type: 'object', properties, required };
}

/** A singular resource name from a one-resource answer's key: `thing_template` -> `ThingTemplate`. */
const componentName = (key: string): string =>
  key
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');

export function finishDocument<T extends object>(finished: T): T {
  const document = finished as Json;
  document.components = { ...document.components };
  document.components.schemas = { ...document.components.schemas };
  const schemas = document.components.schemas;
  schemas.Error = ERROR_SCHEMA;
  // Every answer to a request with a token carries the rate limit's headers: said once, here.
  document.components.securitySchemes.authToken.description =
    "Every request with a token counts against its organisation's API rate limit, and its answer carries " +
    'RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds until the minute ends); beyond the ' +
    'limit the answer is a 429 with Retry-After.';
  const errorAnswer = (description: string) => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  });
  const resources = new Map<string, string>();
  const operations: { path: string; method: string; operation: Json }[] = [];
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const method of METHODS) if (item[method]) operations.push({ path, method, operation: item[method] });
  }
  // Resources first, from the answers that hold one (`{"thing": {...}}`), so lists can refer to them.
  for (const { operation } of operations) {
    const answer = operation.responses?.['200']?.content?.['application/json']?.schema;
    const keys = Object.keys(answer?.properties ?? {});
    const key = keys[0];
    if (keys.length !== 1 || key === undefined || answer.properties[key].type !== 'object') continue;
    const name = componentName(key);
    const text = JSON.stringify(answer.properties[key]);
    if (!schemas[name]) {
      schemas[name] = answer.properties[key];
      resources.set(text, name);
    }
  }
  for (const { path, method, operation } of operations) {
    operation.operationId = operation.operationId ?? operationId(method, path);
    const id: string = operation.operationId;
    const responses = operation.responses;
    replaceResources(responses, resources);
    const secured = Array.isArray(operation.security) && operation.security.length > 0;
    const statuses = ['400', ...(secured ? ['401', '403'] : []), ...(path.includes('{') ? ['404'] : [])];
    for (const status of statuses) responses[status] ??= errorAnswer(ERROR_ANSWERS[status] as string);
    // Sign-out and an API key's deletion are not counted (docs/api.md, "Rate limits and usage").
    const exempt = operation[RATE_LIMIT_EXEMPT] === true;
    delete operation[RATE_LIMIT_EXEMPT];
    if (!exempt && operation.security?.some((s: Json) => 'authToken' in s)) {
      responses['429'] = {
        ...errorAnswer("the organisation's API rate limit is reached for this minute"),
        headers: { 'Retry-After': { description: 'seconds until the minute ends', schema: { type: 'integer' } } },
      };
    }
    const example = exampleOf(id, parameterSchema(operation));
    const media = operation.requestBody?.content?.['application/json'];
    if (media) media.example = example;
    for (const parameter of operation.parameters ?? []) {
      if (parameter.name in example) parameter.example = example[parameter.name];
    }
  }
  return finished;
}

/** Puts a reference to the component wherever an answer holds a schema equal to a resource's. */
function replaceResources(node: Json, resources: Map<string, string>): void {
  for (const [key, value] of Object.entries(node)) {
    if (!value || typeof value !== 'object') continue;
    const name = resources.get(JSON.stringify(value));
    if (name) node[key] = { $ref: `#/components/schemas/${name}` };
    else replaceResources(value, resources);
  }
}
