/**
 * Addresses of other services (the database, an MQTT broker) as they may be printed.
 */

/** An address fit to print: its password, if any, replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/(\/\/[^:/@]*):[^@/]*@/, '$1:***@');
  }
}

/**
 * A request's URL as logs show it: a `token` query parameter (realtime streams) is never written, nor
 * any parameter whose name, percent-decoded, holds `token` (`toke%6E=` and `token[]=` are read as the
 * token too).
 */
export function loggedUrl(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const pairs = url.slice(at + 1).split('&');
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i] as string;
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (/token/i.test(percentDecoded(name))) pairs[i] = `${name}=[redacted]`;
  }
  return `${url.slice(0, at + 1)}${pairs.join('&')}`;
}

/** Percent escapes and `+` decoded byte by byte, never failing on a malformed one (it stays as it is). */
const percentDecoded = (text: string): string =>
  text
    .replace(/\+/g, ' ')
    .replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
