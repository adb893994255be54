/**
 * Realtime push (docs/realtime.md) over one WebSocket per signed-in tab: it authenticates with its
 * first message (browsers cannot set headers on an upgrade, and the token stays out of the URL), then
 * holds every subscription the open pages ask for. A lost connection is opened again with growing
 * waits (1 s doubling to 30 s) and its subscriptions sent again; the state is shown to the user.
 * Nothing missed meanwhile is replayed (docs/realtime.md), so a page reads again what it shows each
 * time its subscription is accepted (`onAccepted`: on subscribing, as something may change between the
 * page's read and the acceptance, and after a lost connection), or when the connection is back
 * (`onResume`). A subscription the server refuses gets the `error` message in its handler.
 */
import { currentSession, endSession } from './session.ts';

export type ConnectionState = 'idle' | 'connecting' | 'live' | 'reconnecting';
export type Message = { type: string; id?: string } & Record<string, unknown>;
type Handler = (message: Message) => void;

interface Subscription {
  topic: string;
  filters: Record<string, unknown>;
  handler: Handler;
  onAccepted: (() => void) | undefined;
}

class Realtime {
  private socket: WebSocket | undefined;
  private authenticated = false;
  private readonly subscriptions = new Map<string, Subscription>();
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly resumeListeners = new Set<() => void>();
  private next = 0;
  private wait = 1000;
  private retry: ReturnType<typeof setTimeout> | undefined;
  /** idle until a page subscribes: pages without live updates open no connection. */
  state: ConnectionState = 'idle';

  /**
   * Subscribes to a topic with filters; answers the function that ends the subscription. `onAccepted`
   * is called each time the server accepts it (after the `subscribed` message reaches the handler).
   */
  subscribe(topic: string, filters: Record<string, unknown>, handler: Handler, onAccepted?: () => void): () => void {
    const id = `s${++this.next}`;
    this.subscriptions.set(id, { topic, filters, handler, onAccepted });
    if (this.authenticated) this.send({ type: 'subscribe', id, topic, ...filters });
    else this.connect();
    return () => {
      this.subscriptions.delete(id);
      if (this.authenticated) this.send({ type: 'unsubscribe', id });
      // Waiting to reconnect for nobody (a page without live updates is shown): stop saying so. Checked
      // once the page has settled, as a page renewing its subscriptions ends them before it starts others.
      else
        queueMicrotask(() => {
          if (this.subscriptions.size === 0 && this.retry) this.stopRetrying();
        });
    };
  }

  onState(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /** Calls `listener` each time the connection is live again after it was lost. */
  onResume(listener: () => void): () => void {
    this.resumeListeners.add(listener);
    return () => this.resumeListeners.delete(listener);
  }

  private stopRetrying(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
    this.wait = 1000;
    this.setState('idle');
  }

  /** Closes the connection for good (sign-out). */
  close(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
    const socket = this.socket;
    this.socket = undefined;
    this.authenticated = false;
    this.subscriptions.clear();
    socket?.close(1000);
    this.setState('idle');
  }

  private setState(state: ConnectionState): void {
    this.state = state;
    for (const listener of this.stateListeners) listener(state);
  }

  private send(message: Record<string, unknown>): void {
    this.socket?.send(JSON.stringify(message));
  }

  private connect(): void {
    const session = currentSession();
    if (this.socket || this.retry || !session) return;
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${scheme}//${location.host}/api/v3/ws`);
    this.socket = socket;
    if (this.state === 'idle') this.setState('connecting');
    socket.onopen = () => socket.send(JSON.stringify({ type: 'auth', token: session.token }));
    socket.onmessage = (event) => {
      const message = JSON.parse(String(event.data)) as Message;
      if (message.type === 'authenticated') {
        this.authenticated = true;
        this.wait = 1000;
        const resumed = this.state === 'reconnecting';
        this.setState('live');
        for (const [id, { topic, filters }] of this.subscriptions)
          this.send({ type: 'subscribe', id, topic, ...filters });
        if (resumed) for (const listener of this.resumeListeners) listener();
        return;
      }
      const subscription = message.id === undefined ? undefined : this.subscriptions.get(message.id);
      subscription?.handler(message);
      if (message.type === 'subscribed') subscription?.onAccepted?.();
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.authenticated = false;
      if (event.code === 4401) {
        endSession('Your session has ended: sign in again.');
        return;
      }
      this.setState('reconnecting');
      this.retry = setTimeout(() => {
        this.retry = undefined;
        if (this.subscriptions.size > 0) this.connect();
        else this.stopRetrying();
      }, this.wait);
      this.wait = Math.min(this.wait * 2, 30_000);
    };
  }
}

export const realtime = new Realtime();
