/**
 * The change feed across instances on one PostgreSQL database (docs/architecture.md, "The change
 * feed"). A transaction that makes changes sends them with NOTIFY, which PostgreSQL delivers only
 * once it commits, and only to the sessions listening then; every instance listens on one connection
 * of its own and tells its feed what the others changed. While that connection is down, changes are
 * missed: once it is back, the feed is told that anything may have changed. `catchUp` waits for the
 * notices already sent, for followers that must not trail another instance's change.
 *
 * Details (what realtime push sends: stored events, an alert, a thing) cross only to instances that
 * want them: each instance says which types it wants when that changes and every few seconds, and
 * the others send those types' details (and events at all) only while some instance wants them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type pg from 'pg';
import type { ChangeAction, ChangeFeed, EntityChange, EntityType } from '../core/change-feed.ts';
import { LATE, waitAtMost } from '../core/wait.ts';
import type { Tx } from './executor.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, statementWaitMs } from './faults.ts';
import { pgDriver } from './pg-driver.ts';

/** NOTIFY payloads must stay under 8,000 bytes: changes are sent in parts of at most this many. */
const PAYLOAD_BYTES = 7000;
const RECONNECT_MS = 1000;
/** How long catching up may wait for the listening connection's answer before it is abandoned (ms). */
export const CATCH_UP_MS = 1000;
/** How often an instance repeats what it wants, and how long the others believe it. */
const WANTS_EVERY_MS = 5000;
const WANTS_LIVE_MS = 3 * WANTS_EVERY_MS;

type Sent = [EntityType, string | null, string | null, ChangeAction, unknown?];
interface Payload {
  /** The sending instance. */
  o: string;
  /** Changes. */
  c?: Sent[];
  /** The types the sender wants with their details (its whole list). */
  w?: EntityType[];
}

/** A stored event as the change feed carries it (events/writer.ts); `data` null with `partial` when too large. */
interface EventDetail {
  data: unknown;
  partial?: boolean;
}

/** The channel of one database schema: instances on other schemas of the database do not hear it. */
export function channelOf(schema: string | undefined): string {
  const name = `thingbase_changes${schema ? `_${schema}` : ''}`;
  // Channel names are identifiers, of at most 63 bytes.
  return name.length <= 63 ? name : `thingbase_changes_${createHash('sha256').update(name).digest('hex').slice(0, 32)}`;
}

export class PostgresChangeLink {
  private readonly origin = randomBytes(8).toString('hex');
  private readonly channel: string;
  private client: pg.Client | undefined;
  /** The last statement sent on `client`: its statements go one after another (`inTurn`). */
  private lastStatement: Promise<unknown> = Promise.resolve();
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  /** What each other instance wants, until when. */
  private readonly wantedBy = new Map<string, { types: Set<EntityType>; until: number }>();
  private readonly repeat: NodeJS.Timeout;
  private readonly stopWatchingWants: () => void;

  constructor(
    private readonly databaseUrl: string,
    schema: string | undefined,
    private readonly feed: ChangeFeed,
    /** How long opening the listening connection may take before it is tried again (ms). */
    private readonly connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
  ) {
    this.channel = channelOf(schema);
    feed.setWantedElsewhere((type) => this.wantedElsewhere(type));
    this.stopWatchingWants = feed.onWantsChange(() => this.sayWants());
    this.repeat = setInterval(() => {
      if (this.feed.wantedHere().length > 0) this.sayWants();
    }, WANTS_EVERY_MS).unref();
  }

  private wantedElsewhere(type: EntityType): boolean {
    if (this.wantedBy.size === 0) return false;
    const now = Date.now();
    for (const [origin, wants] of this.wantedBy) {
      if (wants.until < now) this.wantedBy.delete(origin);
      else if (wants.types.has(type)) return true;
    }
    return false;
  }

  /** Tells the others what this instance wants now (nothing, when it stopped wanting). */
  private sayWants(): void {
    const client = this.client;
    if (!client) return;
    const payload: Payload = { o: this.origin, w: this.feed.wantedHere() };
    this.inTurn(client, 'select pg_notify($1, $2)', [this.channel, JSON.stringify(payload)]).catch(() => {});
  }

  /**
   * A statement on the listening connection, sent once the one before has been answered: pg queues a
   * statement sent while another runs only for now, and says it will stop.
   */
  private inTurn(client: pg.Client, text: string, values?: unknown[]): Promise<unknown> {
    const answered = this.lastStatement.then(() => client.query(text, values));
    this.lastStatement = answered.catch(() => {});
    return answered;
  }

  /** Starts listening; resolves once the first connection listens. */
  async start(): Promise<void> {
    await this.listen();
  }

  private async listen(): Promise<void> {
    const client = new (pgDriver().Client)({
      connectionString: this.databaseUrl,
      connectionTimeoutMillis: this.connectTimeoutMs,
    });
    client.on('notification', (message) => {
      if (message.channel === this.channel && message.payload) this.receive(message.payload);
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      client.end().catch(() => {});
      this.again();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    this.lastStatement = Promise.resolve();
    this.client = client;
    if (this.feed.wantedHere().length > 0) this.sayWants();
  }

  private again(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (this.closed) return;
      this.listen().then(
        // What the others changed while this instance was not listening is unknown.
        () => this.feed.tellEverything(),
        () => this.again(),
      );
    }, RECONNECT_MS);
    this.retry.unref();
  }

  /**
   * Resolves once every change committed by the others before the call has been told. PostgreSQL sends
   * a session the notices it has for it before the answer to its next statement, so the answer to a
   * statement on the listening connection comes after them. Without that connection, the feed is told
   * that anything may have changed.
   */
  async catchUp(): Promise<void> {
    const client = this.client;
    if (client) {
      // A database that hangs must not hold whoever waits (a request's answer cache) for ever: a
      // connection that does not answer in time is abandoned as a statement's is (store/dialect.ts),
      // and listening starts again once the database answers.
      const waitMs = Math.min(statementWaitMs() ?? CATCH_UP_MS, CATCH_UP_MS);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), waitMs);
      });
      try {
        const answered = await Promise.race([this.inTurn(client, 'select 1'), late]);
        if (answered !== 'late') return;
        (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      } catch {
        // Lost meanwhile: as without it.
      } finally {
        clearTimeout(timer);
      }
    }
    this.feed.tellEverything();
  }

  private receive(text: string): void {
    let payload: Payload;
    try {
      payload = JSON.parse(text) as Payload;
    } catch {
      return;
    }
    if (payload.o === this.origin) return;
    if (Array.isArray(payload.w)) {
      if (payload.w.length === 0) this.wantedBy.delete(payload.o);
      else this.wantedBy.set(payload.o, { types: new Set(payload.w), until: Date.now() + WANTS_LIVE_MS });
    }
    if (!Array.isArray(payload.c)) return;
    this.feed.tell(
      payload.c.map(([entityType, organisationKey, entityKey, action, detail]) => ({
        entityType,
        organisationKey,
        entityKey,
        action,
        remote: true,
        ...(detail !== undefined ? { detail } : {}),
      })),
    );
  }

  /** Sends a transaction's changes; PostgreSQL delivers them if and when it commits. */
  async announce(tx: Tx, changes: readonly EntityChange[]): Promise<void> {
    let part: Sent[] = [];
    let bytes = 0;
    const send = async () => {
      if (part.length === 0) return;
      const payload: Payload = { o: this.origin, c: part };
      await sql`select pg_notify(${this.channel}, ${JSON.stringify(payload)})`.execute(tx);
      part = [];
      bytes = 0;
    };
    for (const change of changes) {
      for (const sent of this.sendable(change)) {
        const size = Buffer.byteLength(JSON.stringify(sent)) + 1;
        if (bytes + size > PAYLOAD_BYTES - 64) await send();
        part.push(sent);
        bytes += size;
      }
    }
    await send();
  }

  /**
   * A change as sent: without its detail unless another instance wants it; events not at all unless
   * wanted. A detail too large for one notice is split when it is a list (stored events), else left
   * out (the receiver reads the entity itself); a single event too large goes without its data.
   */
  private sendable(change: EntityChange): Sent[] {
    const { entityType, organisationKey, entityKey, action, detail } = change;
    const bare: Sent = [entityType, organisationKey, entityKey, action];
    const wanted = detail !== undefined && this.wantedElsewhere(entityType);
    if (entityType === 'Event' && !wanted) return [];
    if (!wanted) return [bare];
    const whole: Sent = [entityType, organisationKey, entityKey, action, detail];
    if (Buffer.byteLength(JSON.stringify(whole)) <= PAYLOAD_BYTES - 64) return [whole];
    if (Array.isArray(detail) && detail.length > 1) {
      const half = Math.ceil(detail.length / 2);
      return [
        ...this.sendable({ ...change, detail: detail.slice(0, half) }),
        ...this.sendable({ ...change, detail: detail.slice(half) }),
      ];
    }
    if (entityType === 'Event' && Array.isArray(detail)) {
      return [
        [
          entityType,
          organisationKey,
          entityKey,
          action,
          [{ ...(detail[0] as EventDetail), data: null, partial: true }],
        ],
      ];
    }
    return [bare];
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.repeat);
    this.stopWatchingWants();
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    // A database that hangs never answers the end: past CATCH_UP_MS the socket is closed instead.
    if (
      (await waitAtMost(
        client.end().catch(() => {}),
        CATCH_UP_MS,
      )) === LATE
    ) {
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  }
}
