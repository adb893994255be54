/**
 * Notification actions (docs/rules.md, "Notification actions"): what a rule does when it fires. One
 * store serves both API versions; versions.ts maps their names. Each kind requires and allows its own
 * fields; a field of another kind is a 400 naming it.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { isIP } from 'node:net';
import { type Actor, recordChange } from '../audit/recorder.ts';
import { ApiError, invalidParam, notFound, requiredParam } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { STORED_TIME } from '../core/time.ts';
import { isPrivateAddress } from '../deliveries/address-guard.ts';
import { listDeliveryAttempts } from '../deliveries/service.ts';
import { findRule, onRuleDeleted } from '../rules/service.ts';
import type { Executor, Store } from '../store/store.ts';
import type { NotificationAction } from '../store/tables.ts';
import { openedAction, redactedAction, sealedAction, storedAction } from './credentials.ts';
import { presentAction } from './presenter.ts';
import type { ActionOfRule } from './repository.ts';
import * as actions from './repository.ts';

export type { ActionOfRule };

import type { ActionInput } from './schemas.ts';
import {
  type ApiVersion,
  EMAIL,
  HTTP_CALL,
  PROPERTIES,
  SMS,
  type StoredType,
  storedTypeOf,
  typeNamesOf,
  VERSIONS,
} from './versions.ts';

const KIND_FIELDS: Record<StoredType, { required: string[]; allowed: string[] }> = {
  [EMAIL]: { required: ['to'], allowed: ['to', 'cc', 'bcc', 'subject'] },
  [HTTP_CALL]: { required: ['url', 'method'], allowed: ['url', 'method', 'headers', 'query', 'body'] },
  [PROPERTIES]: { required: ['body'], allowed: ['body'] },
  [SMS]: { required: ['name', 'phone_number'], allowed: ['name', 'phone_number', 'body'] },
};
const COMMON_FIELDS = new Set(['type', 'rule_key']);
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

const P = (field: string) => `notification_action.${field}`;

/** Checks the kind's fields; `creating` makes its required fields required. */
function checkFields(type: StoredType, input: ActionInput, creating: boolean): void {
  const { required, allowed } = KIND_FIELDS[type];
  for (const [field, value] of Object.entries(input)) {
    if (value === undefined || COMMON_FIELDS.has(field)) continue;
    if (!allowed.includes(field)) throw invalidParam(P(field), `is not a field of ${input.type}`);
  }
  if (creating) {
    for (const field of required) {
      const value = input[field as keyof ActionInput];
      if (value === undefined || value === null || value === '') throw requiredParam(P(field));
    }
  }
}

/**
 * One e-mail address, `ops@example.com`, or with a name, `Ops <ops@example.com>`: no line breaks (a
 * header of their own: `a@x.io\r\nBcc: ...`), quotes, commas or semicolons, which mail libraries read
 * as more addresses than the action names.
 */
const ADDRESS = /^(?:[^<>\r\n\0",;]*<[^\s<>@,;"]+@[^\s<>@,;"]+>|[^\s<>@,;"]+@[^\s<>@,;"]+)$/;

/** The first of comma-separated recipients that is no address (ADDRESS); empty entries (a trailing comma) are none. */
function notAnAddress(value: string): string | undefined {
  for (const entry of value.split(',')) {
    const address = entry.trim();
    if (address !== '' && !ADDRESS.test(address)) return address;
  }
  return undefined;
}

/** Whether `value` names no recipient at all. */
const namesNoAddress = (value: string): boolean => value.trim().replaceAll(',', '').trim() === '';

/**
 * Whether an e-mail action's stored recipients and subject can be sent as they are: actions stored
 * before they were checked as they are now may hold what would become headers of their own.
 */
export function sendableEmail(action: {
  recipient?: string | null;
  cc?: string | null;
  bcc?: string | null;
  subject?: string | null;
}): boolean {
  const to = action.recipient ?? '';
  if (namesNoAddress(to) || notAnAddress(to) !== undefined) return false;
  if ([action.cc, action.bcc].some((value) => value && notAnAddress(value) !== undefined)) return false;
  return !/[\r\n]/.test(action.subject ?? '');
}

/** Recipients, comma-separated: each an address (ADDRESS). */
function checkAddresses(field: 'to' | 'cc' | 'bcc', value: string): string {
  const wrong = notAnAddress(value);
  if (wrong !== undefined) {
    throw invalidParam(
      P(field),
      `must be e-mail addresses separated by commas (ops@example.com, Ops <ops@example.com>): ${JSON.stringify(wrong.slice(0, 100))} is none`,
    );
  }
  if (field === 'to' && namesNoAddress(value)) throw invalidParam(P(field), 'names no address');
  return value;
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/\$(THING|SENSOR)\$/g, 'thing'));
  } catch {
    throw invalidParam(P('url'), 'must be an absolute http or https URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalidParam(P('url'), 'must be an http or https URL');
  }
  return url;
}

/**
 * Refuses, when it is made, an HTTP action whose URL names a loopback or private address outright (an
 * IP address of such a network, `localhost`): its deliveries would all be refused (docs/configuration.md,
 * "Notification deliveries"). A name that resolves to one is refused at delivery, where the address is known.
 */
export function refusePrivateUrl(url: unknown): void {
  if (typeof url !== 'string') return;
  let host: string;
  try {
    host = new URL(url.replace(/\$(THING|SENSOR)\$/g, 'thing')).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return; // checkUrl says what is wrong with it.
  }
  // A name may end with the root's dot (`localhost.`): the same host.
  const named = host.toLowerCase().replace(/\.$/, '');
  if (named === 'localhost' || named.endsWith('.localhost') || (isIP(host) !== 0 && isPrivateAddress(host))) {
    throw invalidParam(
      P('url'),
      `names a loopback or private address (${host}), which deliveries do not call unless the server allows it (ALLOW_PRIVATE_WEBHOOKS)`,
    );
  }
}

function checkMethod(method: string): string {
  const upper = method.toUpperCase();
  if (!METHODS.has(upper)) throw invalidParam(P('method'), `must be one of ${[...METHODS].join(', ')}`);
  return upper;
}

/**
 * `headers` or `query` as stored: text values, a number or boolean as its text (as wherever text is
 * declared, docs/api.md). Headers are checked as the HTTP client will send them (a name of token
 * characters, a value without line breaks), so that no delivery fails for them later.
 */
function textMap(value: Record<string, unknown>, field: 'headers' | 'query'): string {
  const texts: Record<string, string> = {};
  for (const [name, member] of Object.entries(value)) {
    const param = P(`${field}.${name}`);
    if (member === null || typeof member === 'object') throw invalidParam(param, 'must be text');
    const text = String(member);
    if (field === 'headers') {
      try {
        validateHeaderName(name);
      } catch {
        throw invalidParam(param, "is no header name: letters, digits and !#$%&'*+-.^_`|~ only");
      }
      try {
        validateHeaderValue(name, text);
      } catch {
        throw invalidParam(param, 'is no header value: one line of text');
      }
    }
    texts[name] = text;
  }
  return JSON.stringify(texts);
}

/** A property-setting body `{<member>: {...}}` of the version, stored in the v3 form. */
function storedPropertiesBody(version: ApiVersion, body: ActionInput['body']): string {
  const member = VERSIONS[version].propertiesMember;
  const map = body !== null && typeof body === 'object' ? body[member] : undefined;
  if (map === null || typeof map !== 'object' || Array.isArray(map) || Object.keys(body as object).length !== 1) {
    throw invalidParam(P('body'), `must be an object of the form {"${member}": {"<name>": "<value>"}}`);
  }
  for (const [name, value] of Object.entries(map)) {
    if (value !== null && typeof value === 'object') throw invalidParam(P(`body.${member}.${name}`), 'must be a value');
  }
  return JSON.stringify({ user_defined_properties: map });
}

/** The columns the input sets, for a kind. */
function columnsOf(version: ApiVersion, type: StoredType, input: ActionInput): Partial<NotificationAction> {
  const columns: Partial<NotificationAction> = {};
  if (input.to !== undefined) columns.recipient = checkAddresses('to', input.to);
  if (input.cc !== undefined) columns.cc = checkAddresses('cc', input.cc);
  if (input.bcc !== undefined) columns.bcc = checkAddresses('bcc', input.bcc);
  if (input.subject !== undefined) {
    // A header: a line break in it would begin another.
    if (input.subject !== null && /[\r\n]/.test(input.subject)) throw invalidParam(P('subject'), 'must be one line');
    columns.subject = input.subject;
  }
  if (input.url !== undefined) columns.url = checkUrl(input.url);
  if (input.method !== undefined) columns.method = checkMethod(input.method);
  if (input.headers !== undefined) columns.headers = textMap(input.headers, 'headers');
  if (input.query !== undefined) columns.query = textMap(input.query, 'query');
  if (input.name !== undefined) columns.name = input.name;
  if (input.phone_number !== undefined) columns.phone_number = input.phone_number;
  if (input.body !== undefined) {
    if (type === PROPERTIES) columns.body = storedPropertiesBody(version, input.body);
    else if (input.body === null || typeof input.body === 'string') columns.body = input.body;
    else if (type === HTTP_CALL) columns.body = JSON.stringify(input.body);
    else throw invalidParam(P('body'), 'must be text');
  }
  return columns;
}

function typeOf(version: ApiVersion, name: string): StoredType {
  const type = storedTypeOf(version, name);
  if (!type) throw invalidParam(P('type'), `is not a notification action type of ${version}`);
  return type;
}

async function requireRuleOf(db: Executor, organisationKeys: string[], ruleKey: string) {
  const rule = await findRule(db, organisationKeys, ruleKey);
  if (!rule) throw notFound('rule', 'rule_key');
  return rule;
}

/**
 * The action as audit trails keep it (docs/rules.md, "Notification actions"): the values of headers
 * and query parameters that carry credentials left out, in `headers`, `query` and the `url` itself (its
 * query string and any password before its host).
 */
export function auditSnapshot(action: NotificationAction): object {
  return presentAction(redactedAction(action), 'v3', STORED_TIME, '') ?? {};
}

/** A notification action of these organisations, or undefined (whatever the API version). */
export async function findAction(
  db: Executor,
  box: SecretBox,
  organisationKeys: string[],
  key: string,
): Promise<NotificationAction | undefined> {
  const row = await actions.findAction(db, organisationKeys, key);
  return row && openedAction(box, row);
}

/** The notification actions of these rules, oldest first (for the rule engine). */
export function listActionsOfRules(db: Executor, ruleKeys: readonly string[]): Promise<ActionOfRule[]> {
  return actions.listActionsOfRules(db, ruleKeys);
}

/** A rule's actions go with it, each with its audit trail; their pending deliveries lapse. */
onRuleDeleted(async (db, actor, rule) => {
  for (const action of await actions.actionsOfRule(db, rule.rule_key)) {
    await recordChange(db, actor, {
      organisationKey: rule.organisation_key,
      action: 'delete',
      entityType: 'NotificationAction',
      entityKey: action.notification_action_key,
      entityName: action.name ?? action.type,
      before: auditSnapshot(storedAction(action)),
    });
  }
  await actions.deleteActionsOfRule(db, rule.rule_key);
});

export async function createAction(
  store: Store,
  box: SecretBox,
  actor: Actor,
  organisationKeys: string[],
  version: ApiVersion,
  input: ActionInput,
): Promise<NotificationAction> {
  const type = typeOf(version, input.type);
  checkFields(type, input, true);
  const now = Date.now();
  return store.transaction(async (tx) => {
    const rule = await requireRuleOf(tx, organisationKeys, input.rule_key as string);
    const row: NotificationAction = {
      notification_action_key: newKey(),
      organisation_key: rule.organisation_key,
      rule_key: rule.rule_key,
      type,
      recipient: null,
      cc: type === EMAIL ? '' : null,
      bcc: type === EMAIL ? '' : null,
      subject: null,
      body: type === HTTP_CALL ? '' : null,
      method: type === PROPERTIES ? 'PUT' : null,
      url: null,
      headers: type === HTTP_CALL || type === PROPERTIES ? '{}' : null,
      query: type === HTTP_CALL || type === PROPERTIES ? '{}' : null,
      name: null,
      phone_number: null,
      ...columnsOf(version, type, input),
      created_at: now,
      updated_at: now,
    };
    await actions.insertAction(tx, sealedAction(box, row));
    await recordChange(tx, actor, {
      organisationKey: row.organisation_key,
      action: 'create',
      entityType: 'NotificationAction',
      entityKey: row.notification_action_key,
      entityName: row.name ?? type,
      after: auditSnapshot(row),
    });
    return row;
  });
}

/** The stored row of an action the caller can see and the version knows (a v2 request never finds an SMS action). */
async function requireActionRow(db: Executor, organisationKeys: string[], version: ApiVersion, key: string) {
  const row = await actions.findAction(db, organisationKeys, key);
  if (!row || (version === 'v2' && row.type === SMS)) throw notFound('notification action', 'notification_action_key');
  return row;
}

/** An action the caller can see and the version knows, its credentials open. */
export async function requireAction(
  db: Executor,
  box: SecretBox,
  organisationKeys: string[],
  version: ApiVersion,
  key: string,
): Promise<NotificationAction> {
  return openedAction(box, await requireActionRow(db, organisationKeys, version, key));
}

/** The actions of a rule the caller can see, of one type (`typeName`) or of every type the version knows. */
export async function listActionsOfRule(
  db: Executor,
  box: SecretBox,
  organisationKeys: string[],
  version: ApiVersion,
  ruleKey: string,
  typeName: string | undefined,
  list: ListQuery,
) {
  const rule = await requireRuleOf(db, organisationKeys, ruleKey);
  const types = (typeName === undefined ? typeNamesOf(version) : [typeName]).map(
    (name) => storedTypeOf(version, name) as string,
  );
  const page = await actions.listActions(db, rule.rule_key, types, list);
  return { ...page, rows: page.rows.map((row) => openedAction(box, row)) };
}

/** A page of the delivery attempts of a (v3) action the caller can see. */
export async function listDeliveriesOfAction(db: Executor, organisationKeys: string[], key: string, list: ListQuery) {
  const action = await requireActionRow(db, organisationKeys, 'v3', key);
  return listDeliveryAttempts(db, action.notification_action_key, list);
}

/**
 * Updates an action; `ownOrganisation` is the caller's own (the first of `organisationKeys`' parent and
 * children), one side of any move between organisations.
 */
export async function updateAction(
  store: Store,
  box: SecretBox,
  actor: Actor,
  organisationKeys: string[],
  ownOrganisation: string,
  version: ApiVersion,
  key: string,
  input: ActionInput,
): Promise<NotificationAction> {
  return store.transaction(async (tx) => {
    const before = await requireAction(tx, box, organisationKeys, version, key);
    const type = typeOf(version, input.type);
    if (type !== before.type) {
      throw new ApiError(400, [
        { code: 'invalid', param: P('type'), message: 'must be the action type; the type of an action cannot change' },
      ]);
    }
    checkFields(type, input, false);
    // An action moves between the caller's own organisation and one of its children, either way, never
    // from one child to another: that would hand one child's credentials and deliveries to its sibling.
    const moveTo =
      before.organisation_key === ownOrganisation ? organisationKeys : [before.organisation_key, ownOrganisation];
    const rule = input.rule_key === undefined ? undefined : await requireRuleOf(tx, moveTo, input.rule_key);
    const ruleKey = rule ? rule.rule_key : before.rule_key;
    // Moved to a rule of another organisation (one the caller also sees: an OEM parent and its child):
    // the action belongs to its rule's organisation from now on. The change is recorded there, and the
    // organisation it leaves records it gone, as a delete: its audit trail says where its action went
    // no further, and the rule engine's cache of its actions is renewed (audit/revisions.ts).
    const organisationKey = rule ? rule.organisation_key : before.organisation_key;
    if (organisationKey !== before.organisation_key) {
      await recordChange(tx, actor, {
        organisationKey: before.organisation_key,
        action: 'delete',
        entityType: 'NotificationAction',
        entityKey: key,
        entityName: before.name ?? type,
        before: auditSnapshot(before),
      });
    }
    const after: NotificationAction = {
      ...before,
      ...columnsOf(version, type, input),
      rule_key: ruleKey,
      organisation_key: organisationKey,
      updated_at: Date.now(),
    };
    await actions.updateAction(tx, sealedAction(box, after));
    await recordChange(tx, actor, {
      organisationKey,
      action: 'update',
      entityType: 'NotificationAction',
      entityKey: key,
      entityName: after.name ?? type,
      before: auditSnapshot(before),
      after: auditSnapshot(after),
    });
    return after;
  });
}

export async function deleteAction(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  version: ApiVersion,
  key: string,
): Promise<void> {
  await store.transaction(async (tx) => {
    const before = storedAction(await requireActionRow(tx, organisationKeys, version, key));
    await actions.deleteAction(tx, key);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'NotificationAction',
      entityKey: key,
      entityName: before.name ?? before.type,
      before: auditSnapshot(before),
    });
  });
}

/** Every action's sealed credentials, by key (docs/configuration.md, "Secret key"). */
export function sealedActionSecrets(
  db: Executor,
): Promise<{ notification_action_key: string; secrets_sealed: string }[]> {
  return actions.sealedActionSecrets(db);
}

export function resealActionSecrets(db: Executor, key: string, secretsSealed: string): Promise<void> {
  return actions.resealActionSecrets(db, key, secretsSealed);
}

/** Seals the credentials of the actions stored before they were sealed; answers how many it sealed. */
export async function sealStoredActions(db: Executor, box: SecretBox): Promise<number> {
  const rows = await actions.unsealedActions(db);
  for (const row of rows) await actions.updateAction(db, sealedAction(box, storedAction(row)));
  return rows.length;
}
