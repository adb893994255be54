/**
 * Splits expression text into tokens. Everything is read by hand, one character class at a time, so
 * no input can make the lexer do more than one pass over the text.
 */
import { ExpressionSyntaxError } from './errors.ts';

export type Keyword = 'and' | 'or' | 'not' | 'contains' | 'in' | 'true' | 'false' | 'null';

export type SymbolText = '(' | ')' | '[' | ']' | ',' | '-' | '==' | '!=' | '>' | '>=' | '<' | '<=';

interface TokenBase {
  /** 0-based offset of the token's first character. */
  readonly position: number;
  /** The token as written, for error messages. */
  readonly text: string;
}

export type Token =
  | (TokenBase & { readonly type: 'number'; readonly value: number })
  | (TokenBase & { readonly type: 'string'; readonly value: string })
  | (TokenBase & { readonly type: 'name'; readonly path: readonly string[] })
  | (TokenBase & { readonly type: 'keyword'; readonly keyword: Keyword })
  | (TokenBase & { readonly type: 'symbol'; readonly symbol: SymbolText })
  | (TokenBase & { readonly type: 'end' });

const KEYWORDS: ReadonlySet<string> = new Set<Keyword>(['and', 'or', 'not', 'contains', 'in', 'true', 'false', 'null']);

/** Keywords are matched case-insensitively (`AND` reads as `and`); names are case-sensitive. */
export function keywordOf(word: string): Keyword | undefined {
  const lower = word.toLowerCase();
  return KEYWORDS.has(lower) ? (lower as Keyword) : undefined;
}

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
const IDENTIFIER_ONLY = /^[A-Za-z_][A-Za-z0-9_]*$/;
const NUMBER = /[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// A number running straight into one of these is a typo such as `12abc` or `1.2.3`, not two tokens.
const NUMBER_TAIL = /[A-Za-z0-9_.]/;
const WHITESPACE = /\s/;

export function isIdentifier(text: string): boolean {
  return IDENTIFIER_ONLY.test(text);
}

const ESCAPES: ReadonlyMap<string, string> = new Map([
  ["'", "'"],
  ['"', '"'],
  ['\\', '\\'],
  ['n', '\n'],
  ['t', '\t'],
  ['r', '\r'],
]);

const TWO_CHAR_SYMBOLS: ReadonlySet<string> = new Set(['==', '!=', '>=', '<=']);
const ONE_CHAR_SYMBOLS: ReadonlySet<string> = new Set(['(', ')', '[', ']', ',', '-', '>', '<']);

// Operators people bring from other languages get a pointer to the word this language uses.
const HINTS: ReadonlyMap<string, string> = new Map([
  ['=', "use '==' to compare"],
  ['!', "use 'not'"],
  ['&', "use 'and'"],
  ['|', "use 'or'"],
]);

/** Shows the character at an offset in a message; invisible or broken ones by their code point. */
function describeCharacterAt(source: string, index: number): string {
  const code = source.codePointAt(index) ?? 0;
  const invisible = code < 0x20 || (code >= 0x7f && code <= 0xa0) || (code >= 0xd800 && code <= 0xdfff);
  if (invisible) return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return `'${String.fromCodePoint(code)}'`;
}

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i]!;
    if (WHITESPACE.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    if (ch === "'" || ch === '"') {
      const { value, end } = readString(source, start);
      tokens.push({ type: 'string', value, position: start, text: source.slice(start, end) });
      i = end;
      continue;
    }
    if (ch >= '0' && ch <= '9') {
      i = readNumber(source, start, tokens);
      continue;
    }
    IDENTIFIER.lastIndex = start;
    const word = IDENTIFIER.exec(source)?.[0];
    if (word !== undefined) {
      const keyword = keywordOf(word);
      if (keyword) {
        tokens.push({ type: 'keyword', keyword, position: start, text: word });
        i = start + word.length;
      } else {
        const { path, end } = readName(source, start, word);
        tokens.push({ type: 'name', path, position: start, text: source.slice(start, end) });
        i = end;
      }
      continue;
    }
    const pair = source.slice(start, start + 2);
    if (TWO_CHAR_SYMBOLS.has(pair)) {
      tokens.push({ type: 'symbol', symbol: pair as SymbolText, position: start, text: pair });
      i += 2;
      continue;
    }
    if (ONE_CHAR_SYMBOLS.has(ch)) {
      tokens.push({ type: 'symbol', symbol: ch as SymbolText, position: start, text: ch });
      i++;
      continue;
    }
    const hint = HINTS.get(ch);
    if (hint) throw new ExpressionSyntaxError(`unexpected '${ch}'`, start, hint);
    throw new ExpressionSyntaxError(`unexpected character ${describeCharacterAt(source, start)}`, start);
  }
  tokens.push({ type: 'end', position: source.length, text: '' });
  return tokens;
}

function readNumber(source: string, start: number, tokens: Token[]): number {
  NUMBER.lastIndex = start;
  const text = NUMBER.exec(source)![0];
  const end = start + text.length;
  const next = source[end];
  if (next !== undefined && NUMBER_TAIL.test(next)) {
    throw new ExpressionSyntaxError(`invalid number`, start);
  }
  const value = Number(text);
  if (!Number.isFinite(value)) throw new ExpressionSyntaxError('number out of range', start);
  tokens.push({ type: 'number', value, position: start, text });
  return end;
}

/** Reads `first` plus any `.segment` parts; a segment after a dot may be quoted to hold any text. */
function readName(source: string, start: number, first: string): { path: string[]; end: number } {
  const path = [first];
  let i = start + first.length;
  while (source[i] === '.') {
    const segmentStart = i + 1;
    const ch = source[segmentStart];
    if (ch === "'" || ch === '"') {
      const { value, end } = readString(source, segmentStart);
      path.push(value);
      i = end;
      continue;
    }
    IDENTIFIER.lastIndex = segmentStart;
    const segment = IDENTIFIER.exec(source)?.[0];
    if (segment === undefined) throw new ExpressionSyntaxError("expected a name after '.'", segmentStart);
    path.push(segment);
    i = segmentStart + segment.length;
  }
  return { path, end: i };
}

function readString(source: string, start: number): { value: string; end: number } {
  const quote = source[start];
  let value = '';
  let i = start + 1;
  while (i < source.length) {
    const ch = source[i]!;
    if (ch === quote) return { value, end: i + 1 };
    if (ch === '\\') {
      const escaped = source[i + 1];
      if (escaped === undefined) break;
      const decoded = ESCAPES.get(escaped);
      if (decoded === undefined) {
        throw new ExpressionSyntaxError(
          `unknown escape '\\${escaped}'`,
          i,
          `a string may use \\' \\" \\\\ \\n \\t \\r`,
        );
      }
      value += decoded;
      i += 2;
      continue;
    }
    value += ch;
    i++;
  }
  throw new ExpressionSyntaxError('unterminated string starting', start);
}
