/**
 * The realtime transports (docs/realtime.md): a WebSocket at /api/v3/ws, where a client subscribes
 * and unsubscribes by message, and Server-Sent Events at /api/v3/stream, one subscription per stream
 * given by the query. Both carry the same messages, from the hub (hub.ts).
 */
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { ApiError, unauthorized } from '../core/errors.ts';
import type { Principal } from '../core/principal.ts';
import type { ConnectionLimits } from './connection-limits.ts';
import type { Connection, RealtimeHub, Subscription } from './hub.ts';
import { reply, SubscribeParams, TOPICS } from './messages.ts';
import { Outbox, type Outgoing, type Transport } from './outbox.ts';

/** How long a WebSocket may stay unauthenticated. */
export const AUTH_TIMEOUT_MS = 10_000;
/** A WebSocket is pinged this often, and closed when no pong came for IDLE_MS. */
export const PING_EVERY_MS = 20_000;
export const IDLE_MS = 60_000;
/** An SSE stream gets a comment line this often, so that proxies keep it open. */
const SSE_KEEPALIVE_MS = 15_000;
/** Text handed to a transport and not yet written out, beyond which messages wait in the outbox. */
const IN_FLIGHT_BYTES = 1024 * 1024;
/** Client messages waiting to be handled, beyond which the server stops reading the socket. */
const MAX_UNHANDLED = 16;

export const CLOSE_UNAUTHORIZED = 4401;
/** A socket authenticated by its first message past its user's or organisation's connections (docs/realtime.md, "Connections per user and organisation"). */
export const CLOSE_TOO_MANY_CONNECTIONS = 4429;
/** WebSocket close code 1001, "going away": the server stops. */
const CLOSE_GOING_AWAY = 1001;
const REVOKED = 'the token was revoked or expired';

export interface RealtimeServices {
  hub: RealtimeHub;
  authenticate(token: string | undefined): Promise<Principal | undefined>;
  /** The connections each user and organisation may hold (connection-limits.ts). */
  limits: ConnectionLimits;
}

/** What the upgrade's X-Auth-Token gave, for the WebSocket handler. */
type RealtimeRequest = FastifyRequest & { realtimePrincipal?: Principal; realtimeRelease?: () => void };

export function registerRealtimeRoutes(app: FastifyInstance, services: RealtimeServices): void {
  app.route({
    method: 'GET',
    url: '/api/v3/ws',
    schema: {
      tags: ['Realtime'],
      summary: 'Realtime push over a WebSocket',
      description:
        'Upgrade to a WebSocket, authenticate with X-Auth-Token or a first message {"type":"auth","token"}, then ' +
        'subscribe: {"type":"subscribe","id","topic",...filters}. Topics events, things, alerts and instructions; ' +
        'messages and filters as in docs/realtime.md.',
      security: [{ authToken: [] }, {}],
    },
    // An upgrade with a bad X-Auth-Token, or past its user's or organisation's connections, is refused
    // before it happens (401, 429); without one, the first message authenticates.
    preValidation: async (request) => {
      const token = request.headers['x-auth-token'];
      if (token === undefined) return;
      const principal = typeof token === 'string' ? await services.authenticate(token) : undefined;
      if (!principal) throw unauthorized();
      (request as RealtimeRequest).realtimePrincipal = principal;
      // A plain GET, answered 426, holds no place.
      if (request.ws) (request as RealtimeRequest).realtimeRelease = admitUpgrade(services.limits, principal, request);
    },
    handler: async () => {
      throw new ApiError(426, [{ code: 'invalid', message: 'this endpoint takes WebSocket upgrades only' }]);
    },
    wsHandler: (socket: WebSocket, request: FastifyRequest) => {
      const { realtimePrincipal: principal, realtimeRelease: release } = request as RealtimeRequest;
      const token = request.headers['x-auth-token'];
      new SocketSession(services, socket, principal, typeof token === 'string' ? token : undefined, release);
    },
  });

  app.route({
    method: 'GET',
    url: '/api/v3/stream',
    schema: {
      tags: ['Realtime'],
      summary: 'Realtime push as Server-Sent Events',
      description:
        'One subscription per stream: the query gives topic and filters as a subscribe message would. Each ' +
        'message is an event named by its type, whose data is the message; its id is the topic. Authenticate ' +
        'with X-Auth-Token or the token parameter (never logged).',
      querystring: {
        type: 'object',
        properties: {
          ...SubscribeParams.properties,
          token: { type: 'string', description: 'the X-Auth-Token, for clients that cannot set headers' },
        },
        required: ['topic'],
      },
      security: [{ authToken: [] }, {}],
    },
    handler: async (request, answer) => {
      const query = { ...(request.query as Record<string, unknown>) };
      const header = request.headers['x-auth-token'];
      const token = typeof header === 'string' ? header : typeof query.token === 'string' ? query.token : undefined;
      delete query.token;
      const principal = await services.authenticate(token);
      if (!principal || token === undefined) throw unauthorized();
      // HEAD (which the GET route answers too) has no body, so no stream: the headers a stream would
      // have, and the answer ends, rather than a stream nobody reads holding one of the user's connections.
      if (request.method === 'HEAD') {
        return answer.code(200).header('content-type', 'text/event-stream; charset=utf-8').send();
      }
      await openStream(services, request, answer, principal, token, query);
    },
  });
}

/**
 * Takes a place for an upgrade authenticated by its X-Auth-Token, before it is accepted (or throws the
 * 429). The place goes back when the connection's socket closes, whichever way: the WebSocket closed
 * by either side, or the upgrade never completed (the client gone before it, a bad handshake); the
 * session also gives it back as soon as it ends. A socket already closed during the authentication
 * takes none: its 'close' has passed.
 */
function admitUpgrade(limits: ConnectionLimits, principal: Principal, request: FastifyRequest): () => void {
  const socket: Socket = request.raw.socket;
  if (socket.destroyed) return () => {};
  const release = limits.admit(principal);
  socket.once('close', release);
  return release;
}

/**
 * Pings a WebSocket every PING_EVERY_MS and calls `idle` once IDLE_MS pass without a pong (from the
 * start, then from the last pong); answers a function that stops both.
 */
export function watchPongs(
  socket: Pick<WebSocket, 'on' | 'ping' | 'readyState' | 'OPEN'>,
  idle: () => void,
): () => void {
  let deadline = setTimeout(idle, IDLE_MS);
  socket.on('pong', () => {
    clearTimeout(deadline);
    deadline = setTimeout(idle, IDLE_MS);
  });
  const pinger = setInterval(() => {
    if (socket.readyState === socket.OPEN) socket.ping();
  }, PING_EVERY_MS);
  return () => {
    clearTimeout(deadline);
    clearInterval(pinger);
  };
}

/** One WebSocket client: authentication, its messages, and the messages sent to it. */
class SocketSession implements Connection {
  readonly outbox: Outbox;
  readonly subscriptions = new Map<string, Subscription>();
  principal!: Principal;
  token = '';
  private authenticated = false;
  private closed = false;
  private inFlight = 0;
  /** Stops the session's timers. */
  private readonly stops: (() => void)[] = [];
  /** Client messages in the order they came, handled one at a time. */
  private handling: Promise<void> = Promise.resolve();
  private unhandled = 0;
  /** Gives back the connection's place among its user's and organisation's (connection-limits.ts); once authenticated. */
  private release: (() => void) | undefined;

  constructor(
    private readonly services: RealtimeServices,
    private readonly socket: WebSocket,
    principal: Principal | undefined,
    token: string | undefined,
    release: (() => void) | undefined,
  ) {
    this.release = release;
    // The socket under the WebSocket: corked while the pumper sends a turn of messages, so they leave together.
    const raw = () => (socket as unknown as { _socket?: { cork(): void; uncork(): void } | null })._socket;
    const transport: Transport = {
      writable: () => this.inFlight < IN_FLIGHT_BYTES && !this.closed,
      send: (outgoing: Outgoing) => this.write(outgoing.text),
      cork: () => raw()?.cork(),
      uncork: () => raw()?.uncork(),
    };
    this.outbox = new Outbox(transport);
    if (principal && token !== undefined) this.begin(principal, token);
    else {
      const timer = setTimeout(() => {
        if (!this.authenticated) this.close(CLOSE_UNAUTHORIZED, 'authentication timed out');
      }, AUTH_TIMEOUT_MS);
      this.stops.push(() => clearTimeout(timer));
    }
    socket.on('message', (data, isBinary) => this.receive(data, isBinary));
    socket.on('close', () => this.end());
    socket.on('error', () => this.end());
    this.stops.push(
      watchPongs(socket, () => {
        this.socket.terminate();
        this.end();
      }),
    );
  }

  private begin(principal: Principal, token: string): void {
    this.principal = principal;
    this.token = token;
    this.authenticated = true;
    this.services.hub.connect(this);
  }

  private write(text: string): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    const size = text.length;
    this.inFlight += size;
    this.socket.send(text, () => {
      this.inFlight -= size;
      if (!this.closed) this.outbox.wake();
    });
  }

  private answer(text: string, type = 'reply'): void {
    this.outbox.push({ id: '', type, text, reply: true });
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.closed) return;
    this.unhandled++;
    if (this.unhandled > MAX_UNHANDLED) this.socket.pause();
    this.handling = this.handling
      .then(() => this.handle(data, isBinary))
      .catch(() => {})
      .then(() => {
        this.unhandled--;
        if (this.unhandled <= MAX_UNHANDLED / 2 && this.socket.isPaused) this.socket.resume();
      });
  }

  private async handle(data: RawData, isBinary: boolean): Promise<void> {
    if (this.closed) return;
    let parsed: unknown;
    try {
      if (isBinary) throw new Error('binary');
      // Text frames arrive as one Buffer (the server's binary type), however many fragments they came in.
      parsed = JSON.parse(String(data));
    } catch {
      return this.error(undefined, 'invalid', 'a message is a JSON object with a type');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return this.error(undefined, 'invalid', 'a message is a JSON object with a type');
    }
    const msg = parsed as Record<string, unknown>;
    const id = typeof msg.id === 'string' ? msg.id : undefined;
    if (msg.type === 'auth') return this.authenticate(msg.token);
    if (!this.authenticated) return this.error(id, 'unauthorized', 'authenticate first: {"type":"auth","token":"..."}');
    switch (msg.type) {
      case 'subscribe':
        return this.subscribe(msg);
      case 'unsubscribe':
        if (id === undefined) return this.error(undefined, 'invalid', 'unsubscribe needs the id of a subscription');
        if (!this.services.hub.unsubscribe(this, id)) return this.error(id, 'not_found', 'no subscription has this id');
        return this.answer(reply('unsubscribed', id));
      default:
        return this.error(id, 'invalid', `unknown message type (${String(msg.type)}): auth, subscribe or unsubscribe`);
    }
  }

  private async authenticate(token: unknown): Promise<void> {
    if (this.authenticated) return this.error(undefined, 'invalid', 'already authenticated');
    const principal = typeof token === 'string' && token !== '' ? await this.services.authenticate(token) : undefined;
    if (this.closed) return;
    if (!principal) {
      this.error(undefined, 'unauthorized', 'the token is not valid');
      this.close(CLOSE_UNAUTHORIZED, 'unauthorized');
      return;
    }
    try {
      this.release = this.services.limits.admit(principal);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      this.error(undefined, 'rate_limited', error.message);
      this.close(CLOSE_TOO_MANY_CONNECTIONS, 'too many realtime connections');
      return;
    }
    this.begin(principal, token as string);
    this.answer(reply('authenticated', undefined));
  }

  private async subscribe(msg: Record<string, unknown>): Promise<void> {
    const { type: _type, id, ...params } = msg;
    if (typeof id !== 'string' || id === '' || id.length > 200) {
      return this.error(undefined, 'invalid', 'subscribe needs an id: a string of 1 to 200 characters');
    }
    try {
      await this.services.hub.subscribe(this, id, params, () => this.answer(reply('subscribed', id)));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // As REST answers say it: `rule_key is required`, `group not found`.
      this.error(id, error.errors[0]?.code ?? 'invalid', error.message);
    }
  }

  private error(id: string | undefined, code: string, message: string): void {
    this.answer(reply('error', id, { code, message }), 'error');
  }

  revoke(): void {
    this.error(undefined, 'unauthorized', REVOKED);
    this.close(CLOSE_UNAUTHORIZED, 'unauthorized');
  }

  shutdown(): void {
    this.close(CLOSE_GOING_AWAY, 'the server is stopping');
  }

  private close(code: number, reason: string): void {
    if (this.closed) return;
    // What waits in the outbox goes first, as far as the socket takes it.
    this.outbox.pump();
    this.end();
    this.socket.close(code, reason);
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stop of this.stops) stop();
    this.services.hub.disconnect(this);
    this.outbox.clear();
    this.release?.();
  }
}

/** One message as an SSE event: named by its type, its id the stream's topic. */
const sseEvent = (type: string, topic: string, text: string) => `event: ${type}\nid: ${topic}\ndata: ${text}\n\n`;

/** An SSE stream of one subscription; refusals come before it starts, as ordinary error answers. */
async function openStream(
  services: RealtimeServices,
  request: FastifyRequest,
  answer: FastifyReply,
  principal: Principal,
  token: string,
  query: Record<string, unknown>,
): Promise<unknown> {
  const raw = answer.raw;
  // Refused (429) before anything of the stream is made; given back when it ends, however it ends.
  const release = services.limits.admit(principal);
  let closed = false;
  const transport: Transport = {
    writable: () => !closed && !raw.writableNeedDrain,
    send: (outgoing) => raw.write(sseEvent(outgoing.type, topic, outgoing.text)),
    cork: () => raw.cork(),
    uncork: () => raw.uncork(),
  };
  const topic =
    typeof query.topic === 'string' && (TOPICS as readonly string[]).includes(query.topic) ? query.topic : '';
  const connection: Connection = {
    outbox: new Outbox(transport),
    principal,
    token,
    subscriptions: new Map(),
    revoke: () => {
      raw.write(sseEvent('error', topic, reply('error', topic, { code: 'unauthorized', message: REVOKED })));
      finish();
      raw.end();
    },
    // The stream ends; an EventSource opens it again by itself, to whichever instance answers.
    shutdown: () => {
      finish();
      raw.end();
    },
    // Its one subscription ended (the role may no longer read the topic): so does the stream, told why.
    ended: (error) => {
      if (closed) return;
      raw.write(sseEvent('error', topic, error));
      finish();
      raw.end();
    },
  };
  let keepAlive: NodeJS.Timeout | undefined;
  const finish = () => {
    if (closed) return;
    closed = true;
    if (keepAlive) clearInterval(keepAlive);
    services.hub.disconnect(connection);
    connection.outbox.clear();
    release();
  };
  services.hub.connect(connection);
  try {
    await services.hub.subscribe(connection, topic, query, () => {
      answer.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      raw.write(': subscribed\n\n');
    });
  } catch (error) {
    // Refused before the stream started: answered by the error handler, as any request is.
    finish();
    throw error;
  }
  raw.on('drain', () => connection.outbox.wake());
  raw.on('close', finish);
  request.raw.on('close', finish);
  keepAlive = setInterval(() => {
    if (!raw.writableNeedDrain) raw.write(': keepalive\n\n');
  }, SSE_KEEPALIVE_MS);
  // A client gone during the subscription's reads closed the socket before these listeners were there.
  if (request.raw.socket.destroyed) finish();
  return answer;
}
