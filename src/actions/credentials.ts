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

/** The action with the values of its credentials redacted: in headers, in query, in the URL's query and password. */
export function redactedAction<T extends NotificationAction>(action: T): T {
  return {
    ...action,
    url: action.url === null ? null : redactUrl(redactSecretParams(action.url)),
    headers: redactedMembers(action.headers, (name) => CREDENTIAL_HEADER.test(name)),
    query: redactedMembers(action.query, namesSecret),
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
