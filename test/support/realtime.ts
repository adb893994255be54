/**
 * Realtime clients for tests: a WebSocket client (the `ws` library, as Node clients use) and a
 * Server-Sent Events reader over plain HTTP, both keeping every message they get so that a test can
 * wait for the one it expects.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import WebSocket from 'ws';

export type Message = Record<string, any>;

/** Messages as they come, and waiting for one that matches. */
class Inbox {
  readonly messages: Message[] = [];
  private waiters: { match: (m: Message) => boolean; resolve: (m: Message) => void }[] = [];
  private seen = 0;

  add(message: Message): void {
    this.messages.push(message);
    for (const waiter of [...this.waiters]) {
      if (waiter.match(message)) {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        waiter.resolve(message);
      }
    }
  }

  /** The first message after the last one taken that matches; waits up to `timeoutMs` for it. */
  next(match: (m: Message) => boolean = () => true, timeoutMs = 5000): Promise<Message> {
    for (let i = this.seen; i < this.messages.length; i++) {
      const message = this.messages[i] as Message;
      if (match(message)) {
        this.seen = i + 1;
        return Promise.resolve(message);
      }
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(this.messages.slice(-5))}`));
      }, timeoutMs);
      const done = (message: Message) => {
        clearTimeout(timer);
        this.seen = this.messages.indexOf(message) + 1;
        resolve(message);
      };
      this.waiters.push({ match, resolve: done });
    });
  }

  /** Messages after the last one taken that match, without waiting. */
  pending(match: (m: Message) => boolean = () => true): Message[] {
    return this.messages.slice(this.seen).filter(match);
  }
}

export class SocketClient extends Inbox {
  closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    super();
    socket.on('message', (data) => {
      this.add(JSON.parse(data.toString()) as Message);
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
  }

  /**
   * Opens a WebSocket to the server at `baseUrl` (`wss:` for `https:`); with a token, sent as
   * X-Auth-Token on the upgrade; `ca` trusts a test's certificate authority.
   */
  static open(baseUrl: string, token?: string, ca?: string): Promise<SocketClient> {
    const url = `${baseUrl.replace(/^http/, 'ws')}/api/v3/ws`;
    const socket = new WebSocket(url, { headers: token ? { 'x-auth-token': token } : {}, ...(ca ? { ca } : {}) });
    const client = new SocketClient(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(client));
      socket.once('error', reject);
      socket.once('unexpected-response', (_request, response: IncomingMessage) => {
        let body = '';
        response.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on('end', () =>
          reject(
            Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode, body }),
          ),
        );
      });
    });
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Subscribes and waits for the answer (`subscribed` or `error`) of this id. */
  async subscribe(id: string, topic: string, filters: Record<string, unknown> = {}): Promise<Message> {
    this.send({ type: 'subscribe', id, topic, ...filters });
    return this.next((m) => (m.type === 'subscribed' || m.type === 'error') && m.id === id);
  }

  close(): void {
    this.socket.close();
  }
}

export class StreamClient extends Inbox {
  status = 0;
  text = '';
  private response: IncomingMessage | undefined;
  ended: Promise<void>;
  private end!: () => void;

  private constructor() {
    super();
    this.ended = new Promise((resolve) => {
      this.end = resolve;
    });
  }

  /** Opens `/api/v3/stream` with the query; resolves once the answer's head is in. */
  static open(baseUrl: string, query: Record<string, string>, token?: string): Promise<StreamClient> {
    const url = new URL('/api/v3/stream', baseUrl);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const client = new StreamClient();
    return new Promise((resolve, reject) => {
      const req = httpRequest(url, { headers: token ? { 'x-auth-token': token } : {} }, (response) => {
        client.response = response;
        client.status = response.statusCode ?? 0;
        let buffer = '';
        response.on('data', (chunk: Buffer) => {
          client.text += chunk.toString();
          buffer += chunk.toString();
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields = Object.fromEntries(
              block
                .split('\n')
                .filter((line) => line !== '' && !line.startsWith(':'))
                .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart()]),
            );
            if (fields.data !== undefined)
              client.add({ ...JSON.parse(fields.data), __event: fields.event, __id: fields.id });
            end = buffer.indexOf('\n\n');
          }
        });
        response.on('end', () => client.end());
        response.on('close', () => client.end());
        resolve(client);
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** The whole answer's body, for refusals (which end at once). */
  async body(): Promise<any> {
    await this.ended;
    return JSON.parse(this.text);
  }

  close(): void {
    this.response?.destroy();
  }
}
