/**
 * External sign-in (`/azure_api_sign_in`, docs/configuration.md, "Identity providers"): an OAuth 2.0
 * resource-owner password grant against a configured provider's token endpoint, then the returned ID
 * token is verified against the provider's JWKS (signature, issuer, audience, expiry). Providers are
 * named in the IDP_CONFIG file.
 */
import { readFileSync } from 'node:fs';
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import { ApiError, unauthorized } from '../core/errors.ts';

export interface IdentityProviderConfig {
  token_url: string;
  client_secret?: string;
  scope?: string;
  jwks_url: string;
  issuer: string;
  audience: string;
}

const REQUEST_TIMEOUT_MS = 10_000;

export class IdentityProvider {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly config: IdentityProviderConfig) {
    this.keys = createRemoteJWKSet(new URL(config.jwks_url), { timeoutDuration: REQUEST_TIMEOUT_MS });
  }

  /** Returns the e-mail address (or preferred_username) the provider vouches for. */
  async authenticate(username: string, password: string): Promise<string> {
    const form = new URLSearchParams({
      grant_type: 'password',
      client_id: this.config.audience,
      username,
      password,
      scope: this.config.scope ?? 'openid email profile',
    });
    if (this.config.client_secret) form.set('client_secret', this.config.client_secret);
    let response: Response;
    try {
      response = await fetch(this.config.token_url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch {
      throw unavailable();
    }
    if (!response.ok) throw unauthorized('the identity provider refused the credentials');
    const answer = (await response.json().catch(() => ({}))) as { id_token?: unknown };
    if (typeof answer.id_token !== 'string') throw unauthorized('the identity provider returned no ID token');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(answer.id_token, this.keys, {
        issuer: this.config.issuer,
        audience: this.config.audience,
      }));
    } catch {
      throw unauthorized('the ID token could not be verified');
    }
    const identity = claims.email ?? claims.preferred_username;
    if (typeof identity !== 'string' || identity === '') throw unauthorized('the ID token names no e-mail address');
    return identity;
  }
}

const unavailable = () =>
  new ApiError(503, [{ code: 'unavailable', message: 'the identity provider cannot be reached' }]);

export type IdentityProviders = ReadonlyMap<string, IdentityProvider>;

export function loadIdentityProviders(path: string | undefined): IdentityProviders {
  if (!path) return new Map();
  let parsed: Record<string, IdentityProviderConfig>;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as Record<string, IdentityProviderConfig>;
  } catch (error) {
    throw new Error(
      `IDP_CONFIG: cannot read ${path} as JSON (${(error as Error).message}): set IDP_CONFIG to such a file`,
    );
  }
  const providers = new Map<string, IdentityProvider>();
  for (const [mode, config] of Object.entries(parsed)) {
    for (const field of ['token_url', 'jwks_url', 'issuer', 'audience'] as const) {
      if (typeof config[field] !== 'string') throw new Error(`IDP_CONFIG: provider "${mode}" needs ${field}`);
    }
    providers.set(mode, new IdentityProvider(config));
  }
  return providers;
}
