/**
 * Notification actions' credentials (docs/rules.md, "Notification actions"): an HTTP kind's `url`,
 * `headers` and `query` are kept sealed together under the server's secret key, as key pairs' secret
 * keys are, and their own columns keep them with the values that carry credentials redacted, which is
 * also how audit trails show them and how reads show them to a role that may not update actions.
 * Only answers to those who may update the action, and its deliveries, open them.
 */
import type { SecretBox } from '../core/secret-box.ts';
import { namesSecret, redactSecretParams } from '../core/urls.ts';
import type { NotificationAction, NotificationActionRow } from '../store/tables.ts';

/**
 * Headers that describe the request rather than authorise it: every other header's value is taken for
 * a credential (webhooks name theirs freely: `X-Api-Pass`, `X-Webhook-Hmac`, `Bearer`).
 */
const DESCRIPTIVE_HEADER =
  /^(accept|accept-charset|accept-encoding|accept-language|cache-control|content-type|content-encoding|content-language|prefer|user-agent)$/i;

/**
 * Query parameter names whose values are credentials: those that name a secret anywhere (a token, a
 * password, an API key) and the signatures, hashes and keys webhooks take (`key=`, `sig=`, `pwd=`,
 * `hmac=`, `X-Amz-Signature`).
 */
const CREDENTIAL_PARAM = /key|sig|auth|session|pass|pwd|hash|hmac|jwt|bearer|nonce|otp|private/i;
const credentialParam = (name: string): boolean => namesSecret(name) || CREDENTIAL_PARAM.test(name);

/**
 * A path segment or value that is a credential rather than a name: webhooks carry their secret in the
 * path (`/services/T0/B0/<24 letters and digits>`, `/api/webhooks/<id>/<68 characters>`) or in a
 * parameter of any name. Letters and digits mixed over 16 characters, or any text of 32 or more;
 * `/maintenance/$THING$` stays readable.
 */
const secretSegment = (segment: string): boolean =>
  (segment.length >= 16 && /\d/.test(segment) && /[a-z]/i.test(segment)) || segment.length >= 32;

/** Whether a query parameter's name or value (either is asked) is a credential. */
const secretParam = (text: string): boolean => credentialParam(text) || secretSegment(text);

/** Whether a member of `query` is a credential, by its name or its value. */
const secretQueryMember = (name: string, value: unknown): boolean =>
  credentialParam(name) || (typeof value === 'string' && secretSegment(value));

/** Whether a member of `headers` is a credential: any but the descriptive headers. */
const secretHeader = (name: string): boolean => !DESCRIPTIVE_HEADER.test(name);

type SecretMember = (name: string, value: unknown) => boolean;

/** An object with the values of the members `secret` finds redacted; anything else as it is. */
function redactedObject(value: unknown, secret: SecretMember): unknown {
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, member]) => [name, secret(name, member) ? '[redacted]' : member]),
  );
}

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

/** A JSON object's text with the values of the members `secret` finds redacted. */
function redactedMembers(text: string | null, secret: SecretMember): string | null {
  if (text === null) return null;
  let object: unknown;
  try {
    object = JSON.parse(text);
  } catch {
    return text;
  }
  if (object === null || typeof object !== 'object') return text;
  return JSON.stringify(redactedObject(object, secret));
}

/**
 * The URL with its credentials redacted: the user name and password (`https://<token>@host`), the path
 * segments that look like secrets, and the query's and fragment's parameters whose name or value is one.
 */
function redactedUrl(url: string): string {
  const hash = url.indexOf('#');
  const fragment = hash < 0 ? '' : `#${redactSecretParams(`?${url.slice(hash + 1)}`, secretParam).slice(1)}`;
  const redacted = redactSecretPath(redactSecretParams(hash < 0 ? url : url.slice(0, hash), secretParam));
  return redacted.replace(/^([a-z][a-z\d+.-]*:\/\/)[^/?#]*@/i, '$1[redacted]@') + fragment;
}

/**
 * The action with the values of its credentials redacted: every header but the descriptive ones, the
 * query's parameters and the URL's parts that carry them. Its `body`, a message template, is kept.
 */
export function redactedAction<T extends NotificationAction>(action: T): T {
  return {
    ...action,
    url: action.url === null ? null : redactedUrl(action.url),
    headers: redactedMembers(action.headers, secretHeader),
    query: redactedMembers(action.query, secretQueryMember),
  };
}

/**
 * An action as an audit trail's snapshot presents it (`headers` and `query` objects), redacted as
 * `redactedAction` does: snapshots written before a credential's kind was known to be one are shown
 * redacted all the same.
 */
export function redactedSnapshot(contents: unknown): unknown {
  if (contents === null || typeof contents !== 'object') return contents;
  const action = contents as Record<string, unknown>;
  return {
    ...action,
    ...(typeof action.url === 'string' ? { url: redactedUrl(action.url) } : {}),
    ...('headers' in action ? { headers: redactedObject(action.headers, secretHeader) } : {}),
    ...('query' in action ? { query: redactedObject(action.query, secretQueryMember) } : {}),
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
