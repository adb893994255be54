/**
 * Example values made from a JSON schema, for operations whose example says nothing more than "a valid
 * request": required members only, each with its default, its first allowed value, or a plain value of
 * its type that meets its bounds. Names that read as something particular (e-mail addresses, URLs,
 * time zones, keys) get a value of that kind.
 */
type Schema = Record<string, unknown>;

const BY_NAME: Record<string, unknown> = {
  email: 'ops@example.com',
  password: 'correct horse battery',
  time_zone: 'UTC',
  url: 'https://example.com/hooks/thingbase',
  to: 'ops@example.com',
  phone_number: '+15550100',
  method: 'POST',
  name: 'Boiler room',
  expression: "temperature > 80 and thing.name == 'boiler'",
  condition: 'temperature > 80',
  thing_expression: "tags contains 'boiler'",
  message: 'Temperature above 80',
  tags: 'boiler,plant-7',
};

const firstType = (schema: Schema): string | undefined => {
  const type = schema.type;
  if (Array.isArray(type)) return (type.find((t) => t !== 'null') ?? type[0]) as string;
  return type as string | undefined;
};

export function exampleValue(schema: Schema, name?: string): unknown {
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (variants) return exampleValue(variants.find((v) => v.type !== 'null') ?? (variants[0] as Schema), name);
  if (name !== undefined && name in BY_NAME) {
    const known = BY_NAME[name];
    if (firstType(schema) === typeof known || (firstType(schema) === undefined && typeof known === 'string')) {
      return known;
    }
  }
  switch (firstType(schema)) {
    case 'object':
      return exampleObject(schema);
    case 'array': {
      const items = (schema.items ?? {}) as Schema;
      const count = typeof schema.minItems === 'number' ? schema.minItems : 1;
      return Array.from({ length: Math.max(1, count) }, () => exampleValue(items, name));
    }
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return exampleText(schema, name);
  }
}

function exampleText(schema: Schema, name: string | undefined): string {
  if (name?.endsWith('_key')) return 'k3y0example';
  const min = typeof schema.minLength === 'number' ? schema.minLength : 1;
  const text = 'example';
  return text.length >= min ? text : text.padEnd(min, 'x');
}

/** The required members of an object schema, each with its example value. */
export function exampleObject(schema: Schema): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  return Object.fromEntries(required.map((n) => [n, exampleValue(properties[n] ?? {}, n)]));
}
