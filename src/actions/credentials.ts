/**
 * Notification actions' credentials (docs/rules.md, "Notification actions"): an HTTP kind's `url`,
 * `headers` and `query` are kept sealed together under the server's secret key, as key pairs' secret
 * keys are, and their own columns keep them with the values that carry credentials redacted, which is
 * also how audit trails show them and how reads show them to a role that may not update actions.
 * Only answers to those who may update the action, and its deliveries, open them.
 */
import type { SecretBox } from '../core/secret-box.ts';
import { namesSecret, redactSecretParams, redactUrl } from '../core/urls.ts';
import type { NotificationAction, NotificationActionRow } from '../store/tables.ts';

/** Header names whose values are credentials. */
const CREDENTIAL_HEADER = /auth|cookie|token|secret|key|passw|signature|credential|session/i;

/**
 * Query parameter names whose values are credentials: those that name a secret anywhere (a token, a
 * password, an API key) and the signatures and keys webhooks take (`key=`, `sig=`, `X-Amz-Signature`).
 */
const credentialParam = (name: string): boolean => namesSecret(name) || /key|sig|auth|session/i.test(name);

/**
 * A path segment that is a credential rather than a name: webhooks carry their secret in the path
 * (`/services/T0/B0/<24 letters and digits>`, `/api/webhooks/<id>/<68 characters>`). Letters and digits
 * mixed over 16 characters, or any segment of 32 or more; `/maintenance/$THING$` stays readable.
 */
const secretSegment = (segment: string): boolean =>
  (segment.length >= 16 && /\d/.test(segment) && /[a-z]/i.test(segment)) || segment.length >= 32;

/** The URL with the path segments that look like credentials redacted. */
function redactSecretPath(url: string): string {
  const scheme = url.indexOf('//');
  if (scheme < 0) return url;
  const path = url.indexOf('/', scheme + 2);
  if (path < 0) return url;
  const query = url.slice(path).search(/[?#]/);
  const end = query < 0 ? url.length : path + query;
  const segments = url.slice(path, end).split('/');
  return `${url.slice(0, path)}${segments.map((s) => (secretSegment(s) ? '[redacted]' : s)).join('/')}${url.slice(end)}`;
}

type Credentials = Pick<NotificationAction, 'url' | 'headers' | 'query'>;

/** A JSON object's text with the values of the members `secret` names redacted. */
function redactedMembers(text: string | null, secret: (name: string) => boolean): string | null {
  if (text === null) return null;
  let object: unknown;
  try {
    object = JSON.parse(text);
  } catch {
    return text;
  }
  if (object === null || typeof object !== 'object') return text;
  return JSON.stringify(
    Object.fromEntries(Object.entries(object).map(([name, value]) => [name, secret(name) ? '[redacted]' : value])),
  );
}

/**
 * The action with the values of its credentials redacted: in headers, in query, in the URL's path,
 * query and password. Its `body`, a message template, is kept.
 */
export function redactedAction<T extends NotificationAction>(action: T): T {
  return {
    ...action,
    url: action.url === null ? null : redactUrl(redactSecretPath(redactSecretParams(action.url, credentialParam))),
    headers: redactedMembers(action.headers, (name) => CREDENTIAL_HEADER.test(name)),
    query: redactedMembers(action.query, credentialParam),
  };
}

/** The row to store: credentials sealed, their columns redacted. */
export function sealedAction(box: SecretBox, action: NotificationAction): NotificationActionRow {
  if (action.url === null && action.headers === null && action.query === null)
    return { ...action, secrets_sealed: null };
  const credentials: Credentials = { url: action.url, headers: action.headers, query: action.query };
  return { ...redactedAction(action), secrets_sealed: box.seal(JSON.stringify(credentials)) };
}

/** The action with its credentials open (a row stored before sealing is read as it is). */
export function openedAction(box: SecretBox, row: NotificationActionRow): NotificationAction {
  const { secrets_sealed, ...action } = row;
  if (secrets_sealed === null) return action;
  return { ...action, ...(JSON.parse(box.open(secrets_sealed)) as Credentials) };
}

/**
 * The action as stored, its credentials left sealed, for what must not open them: audit trails, which
 * redact what its columns hold (already redacted once sealed; a row not sealed yet holds them plain).
 */
export function storedAction(row: NotificationActionRow): NotificationAction {
  const { secrets_sealed: _sealed, ...action } = row;
  return action;
}
