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
 * A URL with the values of its secret query parameters redacted: a request's as logs show it, an
 * action's as audit trails keep it. Any parameter may come in the query string (docs/api.md,
 * "Requests"), secrets too: the value of a parameter whose name, percent-decoded, names a secret (a
 * realtime stream's `token`, a sign-in's `password`, an identity provider's `code`; `toke%6E=` and
 * `token[]=` are read as the token too) is never written, nor a value that holds such a name (a
 * `user` object with its `password`).
 */
export function redactSecretParams(url: string, secret: (name: string) => boolean = namesSecret): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const pairs = url.slice(at + 1).split('&');
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i] as string;
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    if (secret(percentDecoded(name)) || secret(percentDecoded(value))) {
      pairs[i] = `${name}=[redacted]`;
    }
  }
  return `${url.slice(0, at + 1)}${pairs.join('&')}`;
}

/** Names of parameters (and members of objects given as parameters) whose values are secrets. */
const SECRET_NAME = /token|passw|secret|code|api[-_]?key|credential/i;

/** Whether a parameter's name says its value is a secret (a token, a password, a key...). */
export const namesSecret = (name: string): boolean => SECRET_NAME.test(name);

/** Percent escapes and `+` decoded byte by byte, never failing on a malformed one (it stays as it is). */
const percentDecoded = (text: string): string =>
  text
    .replace(/\+/g, ' ')
    .replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
