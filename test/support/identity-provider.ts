/**
 * A real OAuth 2.0 token endpoint and JWKS on loopback, for testing sign-in through an identity
 * provider: it answers the resource-owner password grant with an RS256-signed ID token.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export interface TestIdentityProvider {
  baseUrl: string;
  issuer: string;
  audience: string;
  /** Grants seen, for assertions. */
  grants: URLSearchParams[];
  close(): Promise<void>;
}

export async function startIdentityProvider(accounts: Record<string, string>): Promise<TestIdentityProvider> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const grants: URLSearchParams[] = [];
  let baseUrl = '';
  const issuer = 'https://login.example.test/tenant/v2.0';
  const audience = 'thingbase-client-id';
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.url === '/jwks') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      return;
    }
    if (request.url === '/token' && request.method === 'POST') {
      const form = new URLSearchParams(Buffer.concat(chunks).toString());
      grants.push(form);
      const username = form.get('username') ?? '';
      if (form.get('grant_type') !== 'password' || accounts[username] !== form.get('password')) {
        response.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
        return;
      }
      const idToken = await new SignJWT({ email: username, preferred_username: username })
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey);
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ token_type: 'Bearer', access_token: 'opaque', id_token: idToken }));
      return;
    }
    response.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    issuer,
    audience,
    grants,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
