/**
 * Realtime connections each user and each organisation may hold (docs/realtime.md, "Connections per user and organisation";
 * docs/configuration.md, REALTIME_MAX_CONNECTIONS_PER_USER and REALTIME_MAX_CONNECTIONS_PER_ORGANISATION):
 * past either bound an upgrade authenticated by X-Auth-Token is answered 429 `rate_limited`, a socket
 * authenticated by its first message is told so and closed with 4429, and a stream is a 429; a place
 * comes back when its connection closes, whichever way.
 */
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import WebSocket from 'ws';
import { loadConfig } from '../../src/core/config.ts';
import { childOrganisation, userWithAbilities } from '../support/fixtures.ts';
import { eventually } from '../support/peers.ts';
import { runCli } from '../support/process.ts';
import { type Message, SocketClient, StreamClient } from '../support/realtime.ts';
import { describeOnStores } from '../support/suites.ts';

const PER_USER = 3;
const PER_ORGANISATION = 5;

interface Refusal {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

const wsUrl = (baseUrl: string) => `${baseUrl.replace(/^http/, 'ws')}/api/v3/ws`;

/** An upgrade with X-Auth-Token that the server must refuse: its status, headers and error body. */
function refusedUpgrade(baseUrl: string, token: string): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl(baseUrl), { headers: { 'x-auth-token': token } });
    socket.once('open', () => {
      socket.close();
      reject(new Error('the upgrade was accepted'));
    });
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: JSON.parse(text) }),
      );
    });
  });
}

/** A socket opened without a token that authenticates by its first message; resolves with the answer. */
async function authenticateByMessage(
  baseUrl: string,
  token: string,
): Promise<{ client: SocketClient; answer: Message }> {
  const client = await SocketClient.open(baseUrl);
  client.send({ type: 'auth', token });
  return { client, answer: await client.next() };
}

/** Opens `count` WebSockets with X-Auth-Token. */
async function openSockets(baseUrl: string, token: string, count: number): Promise<SocketClient[]> {
  const clients: SocketClient[] = [];
  for (let i = 0; i < count; i++) clients.push(await SocketClient.open(baseUrl, token));
  return clients;
}

/** Closes the clients and waits until the server has closed each. */
async function closeAll(clients: readonly SocketClient[]): Promise<void> {
  for (const client of clients) client.close();
  await Promise.all(clients.map((client) => client.closed));
}

/**
 * Opens a WebSocket as soon as the server has taken back the places of connections just closed (the
 * client sees its close before the server has finished its own).
 */
async function openOnceFree(baseUrl: string, token: string): Promise<SocketClient> {
  let opened: SocketClient | undefined;
  await eventually(async () => {
    opened = await SocketClient.open(baseUrl, token).catch((error: { status?: number }) => {
      if (error.status !== 429) throw error;
      return undefined;
    });
    return opened !== undefined;
  }, 'a place given back');
  return opened as SocketClient;
}

/** A counter's value in the /metrics text, 0 when absent. */
function counter(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

function assertUserLimit(refusal: Refusal): void {
  assert.equal(refusal.status, 429);
  assert.equal(refusal.body.success, false);
  assert.equal(refusal.body.errors[0].code, 'rate_limited');
  assert.match(refusal.body.errors[0].message, /this user already holds 3 realtime connections/);
  assert.equal(refusal.headers['retry-after'], '5');
}

describeOnStores(
  'realtime connection limits',
  (ctx) => {
    it('when a user holds its limit of connections then the next upgrade is a 429 rate_limited in the error shape, and a first-message authentication is closed with 4429', async () => {
      const admin = await ctx.api.adminToken();
      const { token } = await childOrganisation(ctx.api, admin);
      const held = await openSockets(ctx.api.url, token, PER_USER);
      assertUserLimit(await refusedUpgrade(ctx.api.url, token));

      const { client, answer } = await authenticateByMessage(ctx.api.url, token);
      assert.equal(answer.type, 'error');
      assert.equal(answer.code, 'rate_limited');
      assert.match(answer.message, /this user already holds 3 realtime connections/);
      assert.deepEqual(await client.closed, { code: 4429, reason: 'too many realtime connections' });

      // The connections held still work.
      assert.equal((await (held[0] as SocketClient).subscribe('s', 'events')).type, 'subscribed');
      await closeAll(held);
    });

    it('when one of a user’s connections closes then a new one is accepted, by upgrade or by first message', async () => {
      const admin = await ctx.api.adminToken();
      const { token } = await childOrganisation(ctx.api, admin);
      const held = await openSockets(ctx.api.url, token, PER_USER);
      assertUserLimit(await refusedUpgrade(ctx.api.url, token));
      await closeAll(held.splice(0, 1));
      const again = await openOnceFree(ctx.api.url, token);
      assert.equal((await again.subscribe('s', 'things')).type, 'subscribed');
      assertUserLimit(await refusedUpgrade(ctx.api.url, token));

      // A socket closed by the server (4429) held nothing; one closed by the client gives its place back.
      await closeAll(held.splice(0, 1));
      await eventually(async () => {
        const { client, answer } = await authenticateByMessage(ctx.api.url, token);
        if (answer.type === 'authenticated') {
          held.push(client);
          return true;
        }
        assert.equal((await client.closed).code, 4429);
        return false;
      }, 'a place given back');
      assertUserLimit(await refusedUpgrade(ctx.api.url, token));
      await closeAll([...held, again]);
    });

    it('when a user is at its limit then another user of the same organisation is still served, and an API key of the first counts as the first', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const other = await userWithAbilities(ctx.api, child.token, [121]);
      const held = await openSockets(ctx.api.url, child.token, PER_USER);
      const key = await ctx.api.request('POST', '/api/v3/api_keys', {
        token: child.token,
        body: { api_key: { name: 'looping script' } },
      });
      assert.equal(key.status, 200, key.text);
      assertUserLimit(await refusedUpgrade(ctx.api.url, key.body.api_key.token));

      const served = await SocketClient.open(ctx.api.url, other.token);
      assert.equal((await served.subscribe('s', 'events')).type, 'subscribed');
      const { client, answer } = await authenticateByMessage(ctx.api.url, other.token);
      assert.deepEqual(answer, { type: 'authenticated' });
      await closeAll([...held, served, client]);
    });

    it('when an organisation holds its limit then a user of it with no connection is refused, and other organisations are served', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const second = await userWithAbilities(ctx.api, child.token, [121]);
      const third = await userWithAbilities(ctx.api, child.token, [121]);
      const held = [
        ...(await openSockets(ctx.api.url, child.token, PER_USER)),
        ...(await openSockets(ctx.api.url, second.token, PER_ORGANISATION - PER_USER)),
      ];
      const refused = await refusedUpgrade(ctx.api.url, third.token);
      assert.equal(refused.status, 429);
      assert.equal(refused.body.errors[0].code, 'rate_limited');
      assert.match(refused.body.errors[0].message, /this organisation already holds 5 realtime connections/);
      const { client, answer } = await authenticateByMessage(ctx.api.url, third.token);
      assert.equal(answer.code, 'rate_limited');
      assert.match(answer.message, /this organisation already holds 5/);
      assert.equal((await client.closed).code, 4429);
      const stream = await StreamClient.open(ctx.api.url, { topic: 'events', token: third.token });
      assert.equal(stream.status, 429);
      assert.equal((await stream.body()).errors[0].code, 'rate_limited');

      const elsewhere = await childOrganisation(ctx.api, admin);
      const served = await SocketClient.open(ctx.api.url, elsewhere.token);
      assert.equal((await served.subscribe('s', 'events')).type, 'subscribed');

      await closeAll(held.splice(0, 1));
      const admitted = await openOnceFree(ctx.api.url, third.token);
      await closeAll([...held, served, admitted]);
    });

    it('when an OEM admin signs in to a child then its connections count against the child, and against the admin wherever it acts', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const second = await userWithAbilities(ctx.api, child.token, [121]);
      const inChild = await ctx.api.signIn(undefined, undefined, child.organisationKey);
      const held = [
        ...(await openSockets(ctx.api.url, child.token, PER_USER)),
        ...(await openSockets(ctx.api.url, second.token, PER_ORGANISATION - PER_USER)),
      ];
      const refused = await refusedUpgrade(ctx.api.url, inChild);
      assert.match(refused.body.errors[0].message, /this organisation already holds 5/);
      // The same admin in its own organisation is served: its own organisation holds nothing of the child's.
      const own = await openSockets(ctx.api.url, admin, PER_USER);
      // The user's bound counts its connections in every organisation it acts in.
      await closeAll(held);
      assertUserLimit(await refusedUpgrade(ctx.api.url, inChild));
      await closeAll(own);
      const admitted = await openOnceFree(ctx.api.url, inChild);
      await closeAll([admitted]);
    });

    it('when a user holds its limit in streams then sockets and streams past it are refused with 429, and a stream closed gives its place back', async () => {
      const admin = await ctx.api.adminToken();
      const { token } = await childOrganisation(ctx.api, admin);
      const streams: StreamClient[] = [];
      for (let i = 0; i < PER_USER; i++) {
        const stream = await StreamClient.open(ctx.api.url, { topic: 'events' }, token);
        assert.equal(stream.status, 200);
        streams.push(stream);
      }
      const refused = await StreamClient.open(ctx.api.url, { topic: 'things' }, token);
      assert.equal(refused.status, 429);
      const body = await refused.body();
      assert.equal(body.success, false);
      assert.equal(body.errors[0].code, 'rate_limited');
      assertUserLimit(await refusedUpgrade(ctx.api.url, token));
      for (const stream of streams) stream.close();
      const admitted = await openOnceFree(ctx.api.url, token);
      await closeAll([admitted]);
    });

    it('when connections fail half-way (dropped during the upgrade, the authentication or the stream’s start, or refused) then no place is kept', async () => {
      const admin = await ctx.api.adminToken();
      const { token } = await childOrganisation(ctx.api, admin);
      const dropped: Promise<unknown>[] = [];
      for (let i = 0; i < 10; i++) {
        // An upgrade dropped at some point of its authentication or handshake.
        const upgrade = new WebSocket(wsUrl(ctx.api.url), { headers: { 'x-auth-token': token } });
        upgrade.on('error', () => {});
        setTimeout(() => upgrade.terminate(), i);
        dropped.push(new Promise((resolve) => upgrade.once('close', resolve)));
        // A socket gone while its first message is being authenticated.
        const early = new WebSocket(wsUrl(ctx.api.url));
        early.on('error', () => {});
        early.once('open', () => {
          early.send(JSON.stringify({ type: 'auth', token }));
          setTimeout(() => early.terminate(), i % 3);
        });
        dropped.push(new Promise((resolve) => early.once('close', resolve)));
        // A stream dropped before or while its subscription is read.
        const url = new URL('/api/v3/stream', ctx.api.url);
        url.searchParams.set('topic', 'things');
        const stream = httpRequest(url, { headers: { 'x-auth-token': token } });
        stream.on('error', () => {});
        stream.end();
        setTimeout(() => stream.destroy(), i);
        dropped.push(new Promise((resolve) => stream.once('close', resolve)));
      }
      await Promise.all(dropped);
      // And refusals at the limit, by upgrade, first message and stream.
      const held: SocketClient[] = [];
      for (let i = 0; i < PER_USER; i++) held.push(await openOnceFree(ctx.api.url, token));
      for (let i = 0; i < 3; i++) {
        assertUserLimit(await refusedUpgrade(ctx.api.url, token));
        const { client } = await authenticateByMessage(ctx.api.url, token);
        assert.equal((await client.closed).code, 4429);
        assert.equal((await StreamClient.open(ctx.api.url, { topic: 'events' }, token)).status, 429);
      }
      await closeAll(held);

      // Every place comes back: the user holds its whole limit again, and no more.
      const again: SocketClient[] = [];
      for (let i = 0; i < PER_USER; i++) again.push(await openOnceFree(ctx.api.url, token));
      assertUserLimit(await refusedUpgrade(ctx.api.url, token));
      await closeAll(again);
    });

    it('when connections are refused then /metrics counts them by limit', async () => {
      const admin = await ctx.api.adminToken();
      const child = await childOrganisation(ctx.api, admin);
      const second = await userWithAbilities(ctx.api, child.token, [121]);
      const userLine = 'thingbase_realtime_connections_refused_total{reason="user_limit"}';
      const organisationLine = 'thingbase_realtime_connections_refused_total{reason="organisation_limit"}';
      const before = (await ctx.api.request('GET', '/metrics')).text;
      const held = await openSockets(ctx.api.url, child.token, PER_USER);
      await refusedUpgrade(ctx.api.url, child.token);
      held.push(...(await openSockets(ctx.api.url, second.token, PER_ORGANISATION - PER_USER)));
      await refusedUpgrade(ctx.api.url, second.token);
      const after = (await ctx.api.request('GET', '/metrics')).text;
      assert.equal(counter(after, userLine) - counter(before, userLine), 1, after);
      assert.equal(counter(after, organisationLine) - counter(before, organisationLine), 1, after);
      await closeAll(held);
    });
  },
  {
    env: {
      REALTIME_MAX_CONNECTIONS_PER_USER: String(PER_USER),
      REALTIME_MAX_CONNECTIONS_PER_ORGANISATION: String(PER_ORGANISATION),
    },
  },
);

describe('realtime connection limit settings', () => {
  it('when a limit is not a positive integer then the setting is named, and the start fails with that message', async () => {
    for (const name of ['REALTIME_MAX_CONNECTIONS_PER_USER', 'REALTIME_MAX_CONNECTIONS_PER_ORGANISATION']) {
      for (const text of ['0', '-1', 'ten', '1e3', '0x10', '2.5']) {
        assert.throws(
          () => loadConfig({ [name]: text }),
          new RegExp(`${name} must be a positive integer \\(got "${text.replace('.', '\\.')}"\\)`),
          `${name}=${text}`,
        );
      }
    }
    const defaults = loadConfig({});
    assert.equal(defaults.realtimeMaxConnectionsPerUser, 20);
    assert.equal(
      defaults.realtimeMaxConnectionsPerOrganisation,
      Math.min(500, Math.floor(defaults.httpMaxConnections / 4)),
    );
    // Never most of the HTTP connections: at a small open-file limit's 128 of them, 32.
    assert.equal(loadConfig({ HTTP_MAX_CONNECTIONS: '128' }).realtimeMaxConnectionsPerOrganisation, 32);
    assert.equal(loadConfig({ HTTP_MAX_CONNECTIONS: '100000' }).realtimeMaxConnectionsPerOrganisation, 500);

    const started = await runCli(['serve'], { REALTIME_MAX_CONNECTIONS_PER_USER: 'ten' });
    assert.notEqual(started.code, 0, started.stdout);
    assert.match(started.stderr, /REALTIME_MAX_CONNECTIONS_PER_USER must be a positive integer \(got "ten"\)/);
  });
});
