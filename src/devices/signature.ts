// Device signatures: HMAC-SHA256 over the exact bytes a device signed (docs/devices.md, "HTTP" and "MQTT").
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
const isEnvelopeMember = (name: string): boolean =>
  name === 'hash' || name === 'access_key' || name === 'aliot_protocol_version';

export interface SignedText {
  /** The raw text without the envelope members: what the device HMACed. */
  signed: string;
  /** The top-level `hash` string, or undefined when absent, not a string, repeated or the text is no object. */
  hash: string | undefined;
  /** The top-level `access_key` string, under the same conditions as `hash`. */
  accessKey: string | undefined;
  /**
   * Whether the text is an object with a `hash` or `access_key` member that is not a string, or with an
   * envelope member twice: such a message carries a signature that cannot be checked, and is refused,
   * unlike one that carries none.
   */
  unreadable: boolean;
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
 * Text that is not a single JSON object comes back unchanged with no hash. An envelope member named twice
 * at top level, or a `hash` or `access_key` that is not a string, leaves the hash undefined and marks the
 * text `unreadable`: such a message cannot be verified.
 */
export function signedTextOfMqttPayload(rawText: string): SignedText {
  return signedTextWithEnvelopeLast(rawText) ?? signedTextOfMembers(rawText);
}

/** A key's name as written between its quotes, without escapes: whether it is `name`. */
const keyIs = (text: string, keyStart: number, keyEnd: number, name: string): boolean =>
  keyEnd - keyStart - 2 === name.length && text.startsWith(name, keyStart + 1);

/**
 * signedTextOfMqttPayload for the payloads the SDKs write most, read without keeping each member: a
 * JSON object whose envelope members (if any) all come after every other member, and whose member
 * names hold no escapes. Every message's payload is read this way, and the members' names and places
 * it does not keep were a tenth of what a message allocated at saturation
 * (docs/benchmarks-history.md). Undefined for any other text, which signedTextOfMembers reads; a
 * property test holds the two equal wherever this answers.
 */
export function signedTextWithEnvelopeLast(rawText: string): SignedText | undefined {
  const open = skipWhitespace(rawText, 0);
  if (rawText.charCodeAt(open) !== OPEN_BRACE) return undefined;
  let i = skipWhitespace(rawText, open + 1);
  let hashes = 0;
  let accessKeys = 0;
  let versions = 0;
  let members = 0;
  // Where the last member kept ends, and the last member of all.
  let keptEnd = -1;
  let lastEnd = -1;
  let hashStart = -1;
  let hashEnd = -1;
  let accessKeyStart = -1;
  let accessKeyEnd = -1;
  if (rawText.charCodeAt(i) !== CLOSE_BRACE) {
    for (;;) {
      if (rawText.charCodeAt(i) !== QUOTE) return undefined;
      const keyStart = i;
      const keyEnd = scanString(rawText, i);
      if (keyEnd < 0) return undefined;
      // A name with an escape may spell an envelope member's: the full read decodes it.
      for (let j = keyStart + 1; j < keyEnd - 1; j++) if (rawText.charCodeAt(j) === BACKSLASH) return undefined;
      i = skipWhitespace(rawText, keyEnd);
      if (rawText.charCodeAt(i) !== COLON) return undefined;
      const valueStart = skipWhitespace(rawText, i + 1);
      const valueEnd = scanValue(rawText, valueStart);
      if (valueEnd < 0) return undefined;
      members++;
      lastEnd = valueEnd;
      if (keyIs(rawText, keyStart, keyEnd, 'hash')) {
        hashes++;
        hashStart = valueStart;
        hashEnd = valueEnd;
      } else if (keyIs(rawText, keyStart, keyEnd, 'access_key')) {
        accessKeys++;
        accessKeyStart = valueStart;
        accessKeyEnd = valueEnd;
      } else if (keyIs(rawText, keyStart, keyEnd, 'aliot_protocol_version')) {
        versions++;
      } else {
        // A member kept after an envelope member: the full read keeps the separators right.
        if (hashes + accessKeys + versions > 0) return undefined;
        keptEnd = valueEnd;
      }
      i = skipWhitespace(rawText, valueEnd);
      if (rawText.charCodeAt(i) === COMMA) {
        i = skipWhitespace(rawText, i + 1);
        continue;
      }
      if (rawText.charCodeAt(i) !== CLOSE_BRACE) return undefined;
      break;
    }
  }
  const close = i;
  if (skipWhitespace(rawText, close + 1) !== rawText.length) return undefined;
  const envelope = hashes + accessKeys + versions;
  const signed =
    envelope === 0
      ? rawText
      : envelope === members
        ? rawText.slice(0, open + 1) + rawText.slice(close)
        : rawText.slice(0, keptEnd) + rawText.slice(lastEnd);
  return withEnvelope(rawText, signed, {
    hashes,
    accessKeys,
    versions,
    hashStart,
    hashEnd,
    accessKeyStart,
    accessKeyEnd,
  });
}

/** The envelope members a read of a payload found: how many of each, and where the last hash and access key's values are. */
interface EnvelopeFound {
  hashes: number;
  accessKeys: number;
  versions: number;
  hashStart: number;
  hashEnd: number;
  accessKeyStart: number;
  accessKeyEnd: number;
}

/** The SignedText of `signed`, with the hash and access key the envelope gives, if it can be read. */
function withEnvelope(rawText: string, signed: string, found: EnvelopeFound): SignedText {
  const { hashes, accessKeys, versions } = found;
  const repeated = hashes > 1 || accessKeys > 1 || versions > 1;
  const hash = repeated || hashes !== 1 ? undefined : stringValue(rawText.slice(found.hashStart, found.hashEnd));
  const accessKey =
    repeated || accessKeys !== 1 ? undefined : stringValue(rawText.slice(found.accessKeyStart, found.accessKeyEnd));
  const unreadable = repeated || (hashes > 0 && hash === undefined) || (accessKeys > 0 && accessKey === undefined);
  return { signed, hash, accessKey, unreadable };
}

/** signedTextOfMqttPayload for any text: every top-level member read, wherever the envelope's are. */
export function signedTextOfMembers(rawText: string): SignedText {
  const object = scanTopLevelObject(rawText);
  if (object === undefined) return { signed: rawText, hash: undefined, accessKey: undefined, unreadable: false };
  const { open, close, members } = object;

  // Counted member by member rather than collected: this runs on every MQTT message.
  let hashMember: Member | undefined;
  let accessKeyMember: Member | undefined;
  let hashes = 0;
  let accessKeys = 0;
  let versions = 0;
  for (const m of members) {
    if (m.name === 'hash') {
      hashes++;
      hashMember = m;
    } else if (m.name === 'access_key') {
      accessKeys++;
      accessKeyMember = m;
    } else if (m.name === 'aliot_protocol_version') {
      versions++;
    }
  }
  const envelope = hashes + accessKeys + versions;

  let signed: string;
  if (envelope === 0) {
    signed = rawText;
  } else if (envelope === members.length) {
    signed = rawText.slice(0, open + 1) + rawText.slice(close);
  } else {
    // Each kept member keeps the separator that followed it, except the last kept one, which is followed
    // by whatever closed the object; the text before the first member stays as it was.
    const first = members[0] as Member;
    const last = members[members.length - 1] as Member;
    const keptCount = members.length - envelope;
    let kept = 0;
    signed = rawText.slice(0, first.keyStart);
    for (const m of members) {
      if (isEnvelopeMember(m.name)) continue;
      kept++;
      signed += rawText.slice(m.keyStart, m.valueEnd);
      if (kept < keptCount) signed += rawText.slice(m.valueEnd, m.nextKeyStart);
    }
    signed += rawText.slice(last.valueEnd);
  }

  return withEnvelope(rawText, signed, {
    hashes,
    accessKeys,
    versions,
    hashStart: hashMember?.valueStart ?? -1,
    hashEnd: hashMember?.valueEnd ?? -1,
    accessKeyStart: accessKeyMember?.valueStart ?? -1,
    accessKeyEnd: accessKeyMember?.valueEnd ?? -1,
  });
}

/**
 * The envelope members' names as searched for in a payload: without their opening quote, since a
 * search for a needle starting with `"` stops at every quote of the JSON.
 */
const ENVELOPE_NAMES = ['hash"', 'access_key"', 'aliot_protocol_version"'].map((name) => Buffer.from(name));
const UNICODE_ESCAPE = Buffer.from('\\u');

/**
 * The top-level `hash` of an MQTT payload, found without reading the whole payload, for a message
 * refused unread when the server is overloaded: the SDKs add their envelope members last, so a bulk of
 * 5 KB takes four searches for names and a look at its last hundred bytes instead of decoding it and
 * walking through every value, which took about half of the MQTT broker's time while it refused a
 * flood of bulks (docs/benchmarks-history.md, "overload, 2026-11-26 afternoon").
 *
 * Answers `{ hash }` (undefined when the payload has no top-level `hash` string) only when the members
 * from the first envelope name on are envelope members, each once, up to the end of the object and of
 * the payload, and no envelope name, nor a `\u` escape that could spell one, comes before them;
 * otherwise undefined, and the payload must be read (`signedTextOfMqttPayload`). For a JSON object the
 * hash is the one that function finds (a property test holds them equal); in text that is not JSON it
 * may find a hash that function would not, which only names the refusal to the device.
 */
export function hashAtEnd(payload: Buffer): { hash: string | undefined } | undefined {
  // Where the envelope starts: the quote before the first name found.
  let first = payload.length;
  for (const name of ENVELOPE_NAMES) {
    const at = payload.indexOf(name);
    if (at < 0) continue;
    if (payload[at - 1] !== QUOTE) return undefined;
    if (at - 1 < first) first = at - 1;
  }
  if (first === payload.length) {
    return payload.includes(UNICODE_ESCAPE) ? undefined : { hash: undefined };
  }
  const escaped = payload.indexOf(UNICODE_ESCAPE);
  if (escaped >= 0 && escaped < first) return undefined;

  // Before the envelope: the comma after the last member kept, or the object's opening brace (the
  // envelope ending the payload, the object is the outermost one).
  let before = first - 1;
  while (before >= 0 && isWhitespace(payload[before] as number)) before--;
  if (payload[before] !== COMMA && payload[before] !== OPEN_BRACE) return undefined;

  const tail = payload.toString('utf8', first);
  const scanned = membersToEnd(tail, 0);
  if (scanned === undefined) return undefined;
  const names = new Set<string>();
  let hash: string | undefined;
  for (const m of scanned.members) {
    if (!isEnvelopeMember(m.name) || names.has(m.name)) return undefined;
    names.add(m.name);
    if (m.name === 'hash') hash = stringValue(tail.slice(m.valueStart, m.valueEnd));
  }
  return { hash };
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

// Character codes the scanners compare with.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

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
    if (c === QUOTE) return j + 1;
    if (c === BACKSLASH) j += 2;
    else if (c < 0x20) return -1;
    else j++;
  }
  return -1;
}

/** Index just past the value starting at `i`, or -1. Iterative, so deep nesting cannot exhaust the stack. */
function scanValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return scanString(text, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    // The closer each open object or array awaits, innermost last.
    const closers: number[] = [];
    let j = i;
    while (j < text.length) {
      const d = text.charCodeAt(j);
      if (d === QUOTE) {
        j = scanString(text, j);
        if (j < 0) return -1;
        continue;
      }
      if (d === OPEN_BRACE) closers.push(CLOSE_BRACE);
      else if (d === OPEN_BRACKET) closers.push(CLOSE_BRACKET);
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        if (closers.pop() !== d) return -1;
        if (closers.length === 0) return j + 1;
      }
      j++;
    }
    return -1;
  }
  let j = i;
  while (j < text.length && !endsPrimitive(text.charCodeAt(j))) j++;
  return j > i && PRIMITIVE.test(text.slice(i, j)) ? j : -1;
}

/** Whitespace or one of `,:{}[]"`: where a number, true, false or null ends. */
function endsPrimitive(c: number): boolean {
  return (
    isWhitespace(c) ||
    c === COMMA ||
    c === COLON ||
    c === OPEN_BRACE ||
    c === CLOSE_BRACE ||
    c === OPEN_BRACKET ||
    c === CLOSE_BRACKET ||
    c === QUOTE
  );
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
  const scanned = membersToEnd(text, skipWhitespace(text, open + 1));
  return scanned && { open, ...scanned };
}

/**
 * The members from `i` (a member's key, or the `}` of an empty object) to the `}` that closes their
 * object, after which only whitespace may come to the end of the text; undefined when the text is
 * not so.
 */
function membersToEnd(text: string, i: number): Omit<ScannedObject, 'open'> | undefined {
  const members: Member[] = [];
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
  return { close, members };
}
