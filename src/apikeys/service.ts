/**
 * API keys (docs/api.md, "API keys"): tokens for scripts and integrations, used as X-Auth-Token. A key
 * acts as the user who made it, with its own role, never wider than that user's: its token is
 * answered once and only its hash is kept; it never expires by idleness, and stops working at once,
 * on every instance, when deleted or past its `expires_at`.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { forbidden, invalidParam, notFound, requiredParam, unknownReference } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { Principal } from '../core/principal.ts';
import { STORED_TIME } from '../core/time.ts';
import {
  findBuiltInRole,
  findRole,
  findRoleToAssign,
  grantedBy,
  requireGrantable,
  requireRevocable,
} from '../roles/service.ts';
import { hashToken, newToken } from '../sessions/tokens.ts';
import type { Executor, Store } from '../store/store.ts';
import type { ApiKeyRow } from '../store/tables.ts';
import { presentApiKey } from './presenter.ts';
import * as apiKeys from './repository.ts';

/** How API key tokens begin, so that the server and people tell them from session tokens. */
export const API_KEY_PREFIX = 'tbk_';

export const isApiKeyToken = (token: string): boolean => token.startsWith(API_KEY_PREFIX);

export interface ApiKeyInput {
  name: string;
  role_key?: string | undefined;
  expires_at?: number | null | undefined;
}

export async function createApiKey(
  store: Store,
  actor: Actor,
  principal: Principal,
  input: ApiKeyInput,
  /** The caller's organisation, or one of its children (`child_organisation_key`). */
  organisationKey: string = principal.organisationKey,
): Promise<{ row: ApiKeyRow; token: string }> {
  const now = Date.now();
  const expiresAt = input.expires_at == null ? null : input.expires_at * 1000;
  if (expiresAt !== null && expiresAt <= now) throw invalidParam('api_key.expires_at', 'must be in the future');
  if (principal.userKey === null) throw forbidden('only users may make API keys');
  const token = `${API_KEY_PREFIX}${newToken()}`;
  return store.transaction(async (tx) => {
    // In a child, the caller's role is none of the child's: its account admin's, as when signed in to it.
    const roleKey =
      input.role_key ??
      (organisationKey === principal.organisationKey
        ? principal.roleKey
        : (await findBuiltInRole(tx, organisationKey, 'account_admin'))?.role_key);
    if (roleKey === undefined) throw requiredParam('api_key.role_key');
    // Locked against a delete of the role under way (roles/service.ts, deleteRole).
    const role = await findRoleToAssign(tx, [organisationKey], roleKey);
    if (!role) throw unknownReference('api_key.role_key', roleKey);
    // A key acts with its role: it may hold only what its maker holds.
    requireGrantable(principal, grantedBy(role), 'api_key.role_key');
    const row: ApiKeyRow = {
      api_key_key: newKey(),
      organisation_key: organisationKey,
      name: input.name,
      token_hash: hashToken(token),
      role_key: role.role_key,
      created_by: principal.userKey as string,
      created_at: now,
      expires_at: expiresAt,
      last_used_at: null,
    };
    await apiKeys.insertApiKey(tx, row);
    await recordChange(tx, actor, {
      organisationKey,
      action: 'create',
      entityType: 'ApiKey',
      entityKey: row.api_key_key,
      entityName: row.name,
      after: presentApiKey(row, STORED_TIME),
    });
    return { row, token };
  });
}

export function listApiKeys(db: Executor, organisationKeys: string[], list: ListQuery) {
  return apiKeys.listApiKeys(db, organisationKeys, list);
}

export async function requireApiKey(db: Executor, organisationKeys: string[], key: string): Promise<ApiKeyRow> {
  const row = await apiKeys.findApiKey(db, organisationKeys, key);
  if (!row) throw notFound('API key', 'api_key_key');
  return row;
}

export async function deleteApiKey(
  store: Store,
  actor: Actor,
  principal: Principal,
  organisationKeys: string[],
  key: string,
): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await requireApiKey(tx, organisationKeys, key);
    // Another's key is deleted only by whoever could have given it its role.
    if (before.created_by !== principal.userKey) {
      const role = await findRole(tx, [before.organisation_key], before.role_key);
      if (role) requireRevocable(principal, grantedBy(role), 'api_key_key');
    }
    await apiKeys.deleteApiKey(tx, key);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'ApiKey',
      entityKey: key,
      entityName: before.name,
      before: presentApiKey(before, STORED_TIME),
    });
  });
}

/** Who a request with this API key token acts as (sessions/service.ts), or undefined for none. */
export function findApiKeyPrincipal(db: Executor, tokenHash: string) {
  return apiKeys.findApiKeyPrincipal(db, tokenHash);
}

export function touchApiKey(db: Executor, tokenHash: string, now: number): Promise<void> {
  return apiKeys.touchApiKey(db, tokenHash, now);
}
