import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ApiError } from '../../src/core/errors.ts';
import { IdentityProvider, loadIdentityProviders } from '../../src/sessions/identity-providers.ts';

/**
 * A token endpoint on loopback whose answer each test chooses: `answer` gets the grant's form and
 * says what to send back.
 */
let answer: (form: URLSearchParams) => { status: number; body: string } = () => ({ status: 500, body: '' });
let server: Server;
let baseUrl = '';
let sign: (claims: Record<string, unknown>) => Promise<string>;
const issuer = 'https://idp.example.test';
const audience = 'thingbase';

before(async () => {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'RS256', use: 'sig' };
  sign = (claims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'k' })
      .setIssuer(issuer)
      .setAudience(audience)
      .setExpirationTime('5m')
      .sign(privateKey);
  server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.url === '/jwks') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      return;
    }
    const { status, body } = answer(new URLSearchParams(Buffer.concat(chunks).toString()));
    response.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const provider = (extra: Record<string, string> = {}) =>
  new IdentityProvider({ token_url: `${baseUrl}/token`, jwks_url: `${baseUrl}/jwks`, issuer, audience, ...extra });

async function refusal(work: Promise<unknown>): Promise<ApiError> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, `expected an ApiError, got ${error}`);
  return error;
}

describe('identity providers', () => {
  it('when the provider has a client secret and a scope then the grant carries them', async () => {
    let seen: URLSearchParams | undefined;
    answer = (form) => {
      seen = form;
      return { status: 200, body: '{}' };
    };
    await refusal(provider({ client_secret: 'shh', scope: 'openid' }).authenticate('ann', 'pw'));
    assert.equal(seen?.get('client_secret'), 'shh');
    assert.equal(seen?.get('scope'), 'openid');
  });

  it('when the token endpoint cannot be reached then it is a 503', async () => {
    const unreachable = new IdentityProvider({
      token_url: 'http://127.0.0.1:1/token',
      jwks_url: `${baseUrl}/jwks`,
      issuer,
      audience,
    });
    const error = await refusal(unreachable.authenticate('ann', 'pw'));
    assert.equal(error.status, 503);
  });

  it('when the answer is not JSON or has no ID token then it is a 401', async () => {
    answer = () => ({ status: 200, body: 'not json' });
    assert.match((await refusal(provider().authenticate('ann', 'pw'))).message, /no ID token/);
    answer = () => ({ status: 200, body: '{"id_token": 7}' });
    assert.equal((await refusal(provider().authenticate('ann', 'pw'))).status, 401);
  });

  it('when the ID token names neither an e-mail address nor a user name then it is a 401', async () => {
    const token = await sign({ sub: 'someone' });
    answer = () => ({ status: 200, body: JSON.stringify({ id_token: token }) });
    assert.match((await refusal(provider().authenticate('ann', 'pw'))).message, /names no e-mail address/);
  });

  it('when the ID token names only a preferred user name then that is the identity', async () => {
    const token = await sign({ preferred_username: 'ann@example.com' });
    answer = () => ({ status: 200, body: JSON.stringify({ id_token: token }) });
    assert.equal(await provider().authenticate('ann', 'pw'), 'ann@example.com');
  });

  it('when IDP_CONFIG is unset, unreadable or incomplete then providers are none, or the start is refused', () => {
    assert.equal(loadIdentityProviders(undefined).size, 0);
    const folder = mkdtempSync(join(tmpdir(), 'idp-'));
    assert.throws(() => loadIdentityProviders(join(folder, 'missing.json')), /IDP_CONFIG: cannot read/);
    const broken = join(folder, 'broken.json');
    writeFileSync(broken, '{"azure": ');
    assert.throws(() => loadIdentityProviders(broken), /IDP_CONFIG: cannot read .* as JSON/);
    const incomplete = join(folder, 'incomplete.json');
    writeFileSync(incomplete, JSON.stringify({ azure: { token_url: 'http://x', jwks_url: 'http://x', issuer } }));
    assert.throws(() => loadIdentityProviders(incomplete), /provider "azure" needs audience/);
  });
});
