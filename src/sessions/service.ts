/**
 * Sessions (docs/api.md, "Sessions"): sign-in with a password or through an identity provider,
 * sign-out, and the token check every request goes through.
 */

import { findApiKeyPrincipal, isApiKeyToken, touchApiKey } from '../apikeys/service.ts';
import { ApiError, forbidden, unauthorized } from '../core/errors.ts';
import { commonAbilities } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';
import { monotonicNow, RecentReads } from '../core/recent-reads.ts';
import { resolveTimeZone } from '../core/time.ts';
import { findOrganisation } from '../organisations/service.ts';
import { findBuiltInRole, findRole, permissionsBeyond } from '../roles/service.ts';
import { type Executor, noteChange, type Store } from '../store/store.ts';
import type { UserRow } from '../store/tables.ts';
import { decoyHash, verifyPassword } from '../users/passwords.ts';
import { findUserByEmail } from '../users/service.ts';
import type { IdentityProviders } from './identity-providers.ts';
import * as sessions from './repository.ts';
import { checkSignInThrottle, THROTTLE_WINDOW_MS } from './throttle.ts';
import { hashToken, newToken } from './tokens.ts';

export interface SessionSettings {
  tokenIdleTtlSeconds: number;
  tokenMaxTtlSeconds: number;
  passwordHashCost: number;
}

/** The Session object sign-in answers (docs/api.md, "Sessions"). */
export interface SessionAnswer {
  success: true;
  auth_token: string;
  email: string;
  role: string;
  time_zone: string;
  organisation: { name: string | null; organisation_key: string; license: { license_key: string } };
}

/** Only refresh `last_used_at` when it is older than this (or a tenth of the idle lifetime), so reads stay reads. */
const MAX_TOUCH_INTERVAL_MS = 60_000;

const badCredentials = () =>
  new ApiError(
    401,
    [{ code: 'unauthorized', message: 'wrong e-mail address or password' }],
    'Invalid email or password',
  );

/**
 * How long a token's caller is used again without reading the store (core/recent-reads.ts). Changes
 * made through this server (sign-out, users, roles, organisations) take effect at once; those made
 * through another server on the same PostgreSQL store within this time.
 */
const PRINCIPAL_CACHE_MS = 1000;
const MAX_CACHED_PRINCIPALS = 10_000;

interface CachedPrincipal {
  principal: Principal;
  expiresAt: number;
  lastUsedAt: number;
}

/**
 * Callers are kept in one scope: a user may be signed in to a child organisation, so a change
 * recorded in one organisation can concern callers of another.
 */
const EVERY_CALLER = '';

/** Forgets an e-mail address's failed sign-ins (which may have locked it out, see throttle.ts). */
export async function clearSignInFailures(db: Executor, email: string): Promise<void> {
  await sessions.clearSignInFailures(db, email);
}

export class SessionService {
  /** Callers by token hash: most requests then cost no store read before their own work. */
  private readonly principals = new RecentReads<CachedPrincipal>(PRINCIPAL_CACHE_MS, MAX_CACHED_PRINCIPALS);
  /** Tokens signed out here lately, by hash, with when: never cached again. */
  private readonly signedOut = new Map<string, number>();
  private readonly stopListening: () => void;

  constructor(
    private readonly store: Store,
    private readonly settings: SessionSettings,
    private readonly identityProviders: IdentityProviders,
  ) {
    this.stopListening = store.changes.follow(['User', 'Role', 'Organisation', 'ApiKey'], () =>
      this.principals.changed([EVERY_CALLER]),
    );
  }

  close(): void {
    this.stopListening();
    this.principals.clear();
  }

  async signIn(input: {
    email: string;
    password: string;
    organisationKey?: string | undefined;
    clientAddress: string;
  }) {
    const email = input.email.toLowerCase();
    const now = Date.now();
    await checkSignInThrottle(this.store.db, email, input.clientAddress, now);
    const user = await findUserByEmail(this.store.db, email);
    const valid = await verifyPassword(
      input.password,
      user?.password_hash ?? (await decoyHash(this.settings.passwordHashCost)),
    );
    if (!user || !valid) {
      await this.recordFailure(email, input.clientAddress, now);
      throw badCredentials();
    }
    await sessions.clearSignInFailures(this.store.db, email);
    return this.openSession(user, input.organisationKey, now);
  }

  async signInWithIdentityProvider(input: { clientId: string; code: string; mode: string; clientAddress: string }) {
    const provider = this.identityProviders.get(input.mode);
    if (!provider) {
      throw new ApiError(400, [
        { code: 'invalid', param: 'mode', message: `names no configured identity provider (${input.mode})` },
      ]);
    }
    const now = Date.now();
    const claimed = input.clientId.toLowerCase();
    await checkSignInThrottle(this.store.db, claimed, input.clientAddress, now);
    let email: string;
    try {
      email = (await provider.authenticate(input.clientId, input.code)).toLowerCase();
    } catch (error) {
      if (error instanceof ApiError && error.status === 401)
        await this.recordFailure(claimed, input.clientAddress, now);
      throw error;
    }
    const user = await findUserByEmail(this.store.db, email);
    if (!user) throw unauthorized('no Thingbase user has the e-mail address the identity provider vouched for');
    return this.openSession(user, undefined, now);
  }

  async signOut(token: string): Promise<void> {
    // An API key has no session to end: a script signing out with it would lose its key, so it is
    // revoked by deleting it instead (docs/api.md, "API keys").
    if (isApiKeyToken(token)) {
      throw new ApiError(400, [
        {
          code: 'invalid',
          message: 'an API key is not signed out: it is revoked by deleting it (DELETE /api/v3/api_keys/:api_key_key)',
        },
      ]);
    }
    const tokenHash = hashToken(token);
    // Requests that read the session while it was going must not cache it either.
    const now = Date.now();
    for (const [hash, at] of this.signedOut) if (at < now - 10 * PRINCIPAL_CACHE_MS) this.signedOut.delete(hash);
    this.signedOut.set(tokenHash, now);
    this.principals.delete(tokenHash);
    const session = await sessions.deleteSession(this.store.db, tokenHash);
    this.principals.delete(tokenHash);
    // Told to every instance: their caches forget the token, and realtime push closes what it opened.
    if (session) {
      await noteChange(this.store.db, {
        entityType: 'User',
        organisationKey: session.organisation_key,
        entityKey: session.user_key,
        action: 'update',
      });
    }
  }

  /** The caller behind an X-Auth-Token, or undefined for a missing, unknown, revoked or expired token. */
  async authenticate(token: string | undefined): Promise<Principal | undefined> {
    if (!token) return undefined;
    if (isApiKeyToken(token)) return this.authenticateApiKey(token);
    const tokenHash = hashToken(token);
    const now = Date.now();
    const readAt = monotonicNow();
    const idleMs = this.settings.tokenIdleTtlSeconds * 1000;
    const touchInterval = Math.min(MAX_TOUCH_INTERVAL_MS, this.settings.tokenIdleTtlSeconds * 100);
    const cached = this.principals.get(tokenHash, readAt);
    if (cached && cached.expiresAt > now && cached.lastUsedAt + idleMs > now) {
      if (now - cached.lastUsedAt > touchInterval) {
        cached.lastUsedAt = now;
        await touchQuietly(sessions.touchSession(this.store.db, tokenHash, now));
      }
      return cached.principal;
    }
    const row = await sessions.findSessionPrincipal(this.store.db, tokenHash);
    if (!row) {
      this.principals.delete(tokenHash);
      return undefined;
    }
    // A session in a child organisation acts as its account admin only while its user is one at home.
    const revoked = row.child_role_key !== null && row.own_account_admin !== 1;
    if (revoked || row.expires_at <= now || row.last_used_at + idleMs <= now) {
      this.principals.delete(tokenHash);
      await sessions.deleteSession(this.store.db, tokenHash);
      return undefined;
    }
    let lastUsedAt = row.last_used_at;
    if (now - lastUsedAt > touchInterval) {
      await touchQuietly(sessions.touchSession(this.store.db, tokenHash, now));
      lastUsedAt = now;
    }
    const principal = userPrincipal(row, row.email);
    if (this.signedOut.has(tokenHash)) this.principals.delete(tokenHash);
    else this.principals.set(tokenHash, { principal, expiresAt: row.expires_at, lastUsedAt }, EVERY_CALLER, readAt);
    return principal;
  }

  /** The caller behind an API key's token (apikeys/service.ts): never idle, until deleted or expired. */
  private async authenticateApiKey(token: string): Promise<Principal | undefined> {
    const tokenHash = hashToken(token);
    const now = Date.now();
    const readAt = monotonicNow();
    const cached = this.principals.get(tokenHash, readAt);
    if (cached && cached.expiresAt > now) {
      if (now - cached.lastUsedAt > MAX_TOUCH_INTERVAL_MS) {
        cached.lastUsedAt = now;
        await touchQuietly(touchApiKey(this.store.db, tokenHash, now));
      }
      return cached.principal;
    }
    const row = await findApiKeyPrincipal(this.store.db, tokenHash);
    const expiresAt = row?.expires_at ?? Number.POSITIVE_INFINITY;
    if (!row || expiresAt <= now) {
      this.principals.delete(tokenHash);
      return undefined;
    }
    let lastUsedAt = row.last_used_at ?? 0;
    if (now - lastUsedAt > MAX_TOUCH_INTERVAL_MS) {
      await touchQuietly(touchApiKey(this.store.db, tokenHash, now));
      lastUsedAt = now;
    }
    const principal = userPrincipal(withinMaker(row), `api key ${row.name}`);
    this.principals.set(tokenHash, { principal, expiresAt, lastUsedAt }, EVERY_CALLER, readAt);
    return principal;
  }

  /** Removes expired sessions and stale sign-in failures; run now and then. */
  async prune(): Promise<void> {
    const now = Date.now();
    await sessions.deleteExpiredSessions(this.store.db, now, this.settings.tokenIdleTtlSeconds * 1000);
    await sessions.pruneSignInFailures(this.store.db, now - THROTTLE_WINDOW_MS);
  }

  private recordFailure(email: string, clientAddress: string, now: number) {
    return sessions.recordSignInFailure(this.store.db, email, clientAddress, now);
  }

  private async openSession(user: UserRow, organisationKey: string | undefined, now: number): Promise<SessionAnswer> {
    let organisationKeyOfSession = user.organisation_key;
    let roleKey: string | null = null;
    let role = await findRole(this.store.db, [user.organisation_key], user.role_key);
    if (organisationKey === user.organisation_key) {
      // organisation_key is for entering a child organisation, and nothing else (docs/api.md, "Sessions").
      throw forbidden('organisation_key names a child organisation to sign in to; leave it out to sign in to your own');
    }
    if (organisationKey !== undefined) {
      // An OEM organisation's account admin may act as account admin of one of its children.
      const own = await findOrganisation(this.store.db, user.organisation_key);
      const target = await findOrganisation(this.store.db, organisationKey);
      const childAdmin = target
        ? await findBuiltInRole(this.store.db, target.organisation_key, 'account_admin')
        : undefined;
      if (!own?.is_oem || role?.built_in !== 'account_admin') {
        throw forbidden('you may only sign in to a child organisation of your OEM organisation as its account admin');
      }
      if (target?.parent_organisation_key !== own.organisation_key || !childAdmin) {
        // The same words whether the key is unknown or another's: nothing is told of other organisations.
        throw forbidden(
          `none of your child organisations has the key "${organisationKey}" (give its key, as the organisations list shows it, not its name)`,
        );
      }
      organisationKeyOfSession = target.organisation_key;
      roleKey = childAdmin.role_key;
      role = childAdmin;
    }
    const organisation = await findOrganisation(this.store.db, organisationKeyOfSession);
    if (!organisation || !role) throw unauthorized('the account is incomplete');
    const token = newToken();
    await sessions.insertSession(this.store.db, {
      token_hash: hashToken(token),
      user_key: user.user_key,
      organisation_key: organisationKeyOfSession,
      role_key: roleKey,
      created_at: now,
      last_used_at: now,
      expires_at: now + this.settings.tokenMaxTtlSeconds * 1000,
    });
    return {
      success: true,
      auth_token: token,
      email: user.email,
      role: role.name,
      time_zone: user.time_zone,
      organisation: {
        name: organisation.name,
        organisation_key: organisation.organisation_key,
        license: { license_key: organisation.license_key },
      },
    };
  }
}

/**
 * Waits for a record of a token's use, which may fail without failing the request: a store refusing
 * writes (a full disk, docs/operations.md) still serves reads, and a session read again before its
 * last use was recorded only lives as if it had been idle since the last record that worked.
 */
async function touchQuietly(touch: Promise<void>): Promise<void> {
  try {
    await touch;
  } catch {
    // The next touch interval tries again.
  }
}

/**
 * An API key's role as far as the user who made it still holds it (docs/api.md, "API keys"): a key
 * made by a user whose role was narrowed since, or who was given another, does only what both allow.
 */
function withinMaker<
  R extends { abilities: string; account_admin: number; maker_abilities: string; maker_account_admin: number },
>(row: R): R {
  if (row.maker_account_admin === 1) return row;
  const key = JSON.parse(row.abilities) as number[];
  const maker = new Set(JSON.parse(row.maker_abilities) as number[]);
  const keyRole = { abilities: key, accountAdmin: row.account_admin === 1 };
  if (permissionsBeyond({ abilities: maker, accountAdmin: false }, keyRole) === undefined) return row;
  return { ...row, account_admin: 0, abilities: JSON.stringify(commonAbilities(new Set(key), maker)) };
}

/** A user's principal from the columns a session or an API key reads; `userName` as audit trails name it. */
function userPrincipal(
  row: {
    user_key: string;
    role_key: string;
    role_name: string;
    account_admin: number;
    abilities: string;
    organisation_key: string;
    is_oem: number;
    time_zone: string;
    email: string;
  },
  userName: string,
): Principal {
  return Object.freeze({
    kind: 'user',
    userKey: row.user_key,
    userName,
    email: row.email,
    roleKey: row.role_key,
    roleName: row.role_name,
    accountAdmin: row.account_admin === 1,
    abilities: new Set(JSON.parse(row.abilities) as number[]),
    organisationKey: row.organisation_key,
    organisationIsOem: row.is_oem === 1,
    timeZone: resolveTimeZone(row.time_zone) ?? 'Etc/UTC',
  });
}
