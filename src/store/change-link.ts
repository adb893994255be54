/**
 * The change feed across instances on one PostgreSQL database (docs/architecture.md, "The change
 * feed"). A transaction that makes changes sends them with NOTIFY, which PostgreSQL delivers only
 * once it commits, and only to the sessions listening then; every instance listens on one connection
 * of its own and tells its feed what the others changed. While that connection is down, changes are
 * missed: once it is back, the feed is told that anything may have changed. `catchUp` waits for the
 * notices already sent, for followers that must not trail another instance's change.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import type { ChangeAction, ChangeFeed, EntityChange, EntityType } from '../core/change-feed.ts';
import type { Tx } from './executor.ts';

/** NOTIFY payloads must stay under 8,000 bytes: changes are sent in parts of at most this many. */
const PAYLOAD_BYTES = 7000;
const RECONNECT_MS = 1000;

type Sent = [EntityType, string | null, string | null, ChangeAction];
interface Payload {
  /** The sending instance. */
  o: string;
  c: Sent[];
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
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly databaseUrl: string,
    schema: string | undefined,
    private readonly feed: ChangeFeed,
  ) {
    this.channel = channelOf(schema);
  }

  /** Starts listening; resolves once the first connection listens. */
  async start(): Promise<void> {
    await this.listen();
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
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
    this.client = client;
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
      try {
        await client.query('select 1');
        return;
      } catch {
        // Lost meanwhile: as without it.
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
    if (payload.o === this.origin || !Array.isArray(payload.c)) return;
    this.feed.tell(
      payload.c.map(([entityType, organisationKey, entityKey, action]) => ({
        entityType,
        organisationKey,
        entityKey,
        action,
        remote: true,
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
      const sent: Sent = [change.entityType, change.organisationKey, change.entityKey, change.action];
      const size = Buffer.byteLength(JSON.stringify(sent)) + 1;
      if (bytes + size > PAYLOAD_BYTES - 64) await send();
      part.push(sent);
      bytes += size;
    }
    await send();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
