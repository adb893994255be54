/**
 * Gateway configuration documents: the data URI `/configuration` answers, and the configuration a
 * gateway sends when it registers (a data URI, JSON text, or a JSON object).
 */
import { invalidParam } from '../core/errors.ts';

export function toDataUri(document: unknown): string {
  return `data:application/json;base64,${Buffer.from(JSON.stringify(document), 'utf8').toString('base64')}`;
}

// RFC 2397: data:[<mediatype>][;base64],<data>
const DATA_URI = /^data:([^,]*),(.*)$/is;
const BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/** The text a data URI carries. Malformed URIs and base64 are a 400 naming `param`. */
export function decodeDataUri(uri: string, param: string): string {
  const match = DATA_URI.exec(uri.trim());
  if (!match) throw invalidParam(param, 'is not a data URI (data:[<media type>][;base64],<data>)');
  const meta = (match[1] ?? '').split(';').map((p) => p.trim().toLowerCase());
  const data = match[2] ?? '';
  if (meta.includes('base64')) {
    const compact = data.replace(/\s+/g, '');
    // Buffer.from skips characters outside the alphabet silently; refuse them instead.
    if (!BASE64.test(compact) || compact.length % 4 === 1) throw invalidParam(param, 'has malformed base64 data');
    // Node's base64 decoder also reads the URL-safe alphabet.
    return Buffer.from(compact, 'base64').toString('utf8');
  }
  try {
    return decodeURIComponent(data);
  } catch {
    throw invalidParam(param, 'has malformed percent-encoded data');
  }
}

/**
 * A registration's configuration as a JSON object. A string starting with `data:` is a data URI; any
 * other string is JSON text; an object is taken as is.
 */
export function readConfiguration(value: string | object, param: string): Record<string, unknown> {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    const text = /^\s*data:/i.test(value) ? decodeDataUri(value, param) : value;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw invalidParam(param, 'does not hold JSON text');
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidParam(param, 'must hold a JSON object');
  }
  return parsed as Record<string, unknown>;
}
