// Device signatures: HMAC-SHA256 over the exact bytes a device signed (DEVICES.md, "Credentials").
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const KEY_CACHE_SIZE = 10_000;
/** Secrets as key objects: an HMAC keyed with one skips preparing the key on every message. */
const keys = new Map<string, KeyObject>();

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= KEY_CACHE_SIZE) keys.clear();
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    keys.set(secret, key);
  }
  return key;
}

/** Lowercase hex HMAC-SHA256 of `message` (strings are taken as UTF-8) keyed with `secret` (UTF-8). */
export function hmacHex(secret: string, message: string | Buffer): string {
  return createHmac('sha256', secret).update(message).digest('hex');
}

/**
 * Whether `signatureHex` is the HMAC-SHA256 of `message` under `secret`. The digests are compared in
 * constant time; anything that is not 64 hex digits is simply false. Upper-case hex is tolerated since it
 * names the same digest.
 */
export function verifySignature(secret: string, message: Buffer | string, signatureHex: string): boolean {
  if (typeof signatureHex !== 'string' || !SHA256_HEX.test(signatureHex)) return false;
  const expected = createHmac('sha256', keyOf(secret)).update(message).digest();
  return timingSafeEqual(expected, Buffer.from(signatureHex, 'hex'));
}

/** The top-level members a device adds to an MQTT payload after computing its hash. */
export const ENVELOPE_MEMBERS: readonly string[] = ['hash', 'access_key', 'aliot_protocol_version'];

export interface SignedText {
  /** The raw text without the envelope members: what the device HMACed. */
  signed: string;
  /** The top-level `hash` string, or undefined when absent, not a string, repeated or the text is no object. */
  hash: string | undefined;
  /** The top-level `access_key` string, under the same conditions as `hash`. */
  accessKey: string | undefined;
}

/**
 * Recovers the text a device signed from the raw text of an MQTT payload: the top-level members `hash`,
 * `access_key` and `aliot_protocol_version` are cut out together with one separating comma each, and every
 * other byte is kept. The text is never re-serialised, since SDKs differ in escaping, number printing and
 * member order (a Java device may put the members anywhere).
 *
 * Which separator goes with a removed member: the one after it, or for the last member the one before it.
 * So `{"a":1,"hash":"h"}` and `{"hash":"h","a":1}` both give `{"a":1}`, and with Python's `", "` / `": "`
 * separators `{"a": 1, "hash": "h", "b": 2}` gives `{"a": 1, "b": 2}`. When nothing else remains the
 * result is `{}`.
 *
 * Text that is not a single JSON object comes back unchanged with no hash, and so does a member name that
 * appears twice at top level (the hash is then undefined: such a message cannot be verified).
 */
export function signedTextOfMqttPayload(rawText: string): SignedText {
  const unsigned: SignedText = { signed: rawText, hash: undefined, accessKey: undefined };
  const object = scanTopLevelObject(rawText);
  if (object === undefined) return unsigned;
  const { open, close, members } = object;

  const seen = new Map<string, number>();
  for (const m of members) {
    if (ENVELOPE_MEMBERS.includes(m.name)) seen.set(m.name, (seen.get(m.name) ?? 0) + 1);
  }
  const kept = members.filter((m) => !ENVELOPE_MEMBERS.includes(m.name));

  let signed: string;
  if (kept.length === members.length) {
    signed = rawText;
  } else if (kept.length === 0) {
    signed = rawText.slice(0, open + 1) + rawText.slice(close);
  } else {
    // Each kept member keeps the separator that followed it, except the last kept one, which is followed
    // by whatever closed the object; the text before the first member stays as it was.
    const first = members[0]!;
    const last = members[members.length - 1]!;
    const parts = [rawText.slice(0, first.keyStart)];
    kept.forEach((m, i) => {
      parts.push(rawText.slice(m.keyStart, m.valueEnd));
      parts.push(i < kept.length - 1 ? rawText.slice(m.valueEnd, m.nextKeyStart) : '');
    });
    parts.push(rawText.slice(last.valueEnd));
    signed = parts.join('');
  }

  const memberString = (name: string): string | undefined => {
    if (seen.get(name) !== 1) return undefined;
    const m = members.find((x) => x.name === name)!;
    return stringValue(rawText.slice(m.valueStart, m.valueEnd));
  };
  const repeated = [...seen.values()].some((n) => n > 1);
  return {
    signed,
    hash: repeated ? undefined : memberString('hash'),
    accessKey: repeated ? undefined : memberString('access_key'),
  };
}

interface Member {
  name: string;
  keyStart: number;
  valueStart: number;
  valueEnd: number;
  /** Where the next member's key starts; for the last member, where `}` is. */
  nextKeyStart: number;
}

interface ScannedObject {
  open: number;
  close: number;
  members: Member[];
}

const PRIMITIVE = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)$/;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function skipWhitespace(text: string, i: number): number {
  while (i < text.length && isWhitespace(text.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string starting at `i` (which must be `"`), or -1 when it does not end properly. */
function scanString(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length) {
    const c = text.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c === 0x5c) j += 2;
    else if (c < 0x20) return -1;
    else j++;
  }
  return -1;
}

/** Index just past the value starting at `i`, or -1. Iterative, so deep nesting cannot exhaust the stack. */
function scanValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return scanString(text, i);
  if (c === '{' || c === '[') {
    const closers: string[] = [];
    let j = i;
    while (j < text.length) {
      const d = text[j];
      if (d === '"') {
        j = scanString(text, j);
        if (j < 0) return -1;
        continue;
      }
      if (d === '{') closers.push('}');
      else if (d === '[') closers.push(']');
      else if (d === '}' || d === ']') {
        if (closers.pop() !== d) return -1;
        if (closers.length === 0) return j + 1;
      }
      j++;
    }
    return -1;
  }
  let j = i;
  while (j < text.length && !isWhitespace(text.charCodeAt(j)) && !',:{}[]"'.includes(text[j]!)) j++;
  return j > i && PRIMITIVE.test(text.slice(i, j)) ? j : -1;
}

function stringValue(token: string): string | undefined {
  if (!token.startsWith('"')) return undefined;
  // Most member names and hashes hold no escapes: no need for the JSON parser.
  if (!token.includes('\\')) return token.slice(1, -1);
  try {
    return JSON.parse(token) as string;
  } catch {
    return undefined;
  }
}

/** The members of the top-level object, or undefined when the text is not one JSON object. */
function scanTopLevelObject(text: string): ScannedObject | undefined {
  const open = skipWhitespace(text, 0);
  if (text[open] !== '{') return undefined;
  const members: Member[] = [];
  let i = skipWhitespace(text, open + 1);
  if (text[i] !== '}') {
    for (;;) {
      if (text[i] !== '"') return undefined;
      const keyStart = i;
      const keyEnd = scanString(text, i);
      if (keyEnd < 0) return undefined;
      const name = stringValue(text.slice(keyStart, keyEnd));
      if (name === undefined) return undefined;
      i = skipWhitespace(text, keyEnd);
      if (text[i] !== ':') return undefined;
      const valueStart = skipWhitespace(text, i + 1);
      const valueEnd = scanValue(text, valueStart);
      if (valueEnd < 0) return undefined;
      const member: Member = { name, keyStart, valueStart, valueEnd, nextKeyStart: -1 };
      members.push(member);
      i = skipWhitespace(text, valueEnd);
      if (text[i] === ',') {
        i = skipWhitespace(text, i + 1);
        member.nextKeyStart = i;
        continue;
      }
      if (text[i] !== '}') return undefined;
      member.nextKeyStart = i;
      break;
    }
  }
  const close = i;
  if (skipWhitespace(text, close + 1) !== text.length) return undefined;
  return { open, close, members };
}
