/**
 * Event storage built for volume (docs/devices.md, "HTTP" and "Overload"). Requests hand their events
 * to the writer, which starts transactions at most every few milliseconds, each with everything that
 * arrived since the last, and answers each request only once its events are committed: a device's
 * acknowledgement means its data is durable. A request's events are never split across transactions,
 * so a bulk is stored whole or not at all. When the store falls behind, new work is refused (503 with
 * Retry-After) instead of piling up: past half of its limit, from whoever holds more than its fair
 * share, and batches are taken for transactions in turns by organisation (fair-share.ts).
 *
 * Requests check their events against things and templates they may have read from a cache. Each
 * batch says which (`subject`), and the transaction confirms them before writing: a batch whose thing
 * was deleted, renamed or moved to another template, or whose template's metrics changed since, is
 * refused with StaleSubjectError (nothing of it stored) while the others of the transaction go on.
 */

import { sendAgainLater } from '../core/errors.ts';
import { RowsStatement } from '../store/dialect.ts';
import { withStoreDeadline } from '../store/faults.ts';
import { noteChange, type Store, type Tx } from '../store/store.ts';
import { recordHeartbeat, recordLastEvents, type ThingTouch } from '../things/service.ts';
import { FairShare, type ShareRefusal, TurnQueue } from './fair-share.ts';
import { insertEvents, type NewEvent } from './repository.ts';
import { withoutExpired } from './retention.ts';
import { addToRollups, metricPaths, SlotCounter } from './rollups.ts';
import { addToTemplateRollups, templateSlotsOf } from './template-rollups.ts';

export type { NewEvent };

/** What one request writes. */
export interface IngestBatch {
  events: NewEvent[];
  /** Heartbeats: thing id to receipt time (ms). */
  heartbeats?: Map<number, number>;
  /** Work to run in the same transaction after the events are in (metric discovery, rules...). */
  after?: (tx: Tx) => Promise<void>;
  /** The organisation and things the events belong to, as the events were checked against them. */
  subject: BatchSubject;
  /**
   * Who sent it, for fair shares of the queue inside its organisation (fair-share.ts): an HTTP client
   * (key pair and address) or an MQTT connection. Batches without one share one source.
   */
  source?: string;
}

/** A thing as a batch was checked against it: its key, template and that template's metrics (JSON text). */
export interface SubjectThing {
  thing_key: string;
  thing_template_key: string;
  metrics: string;
}

export interface BatchSubject {
  organisationKey: string;
  /** By thing id. */
  things: ReadonlyMap<number, SubjectThing>;
}

/** The batch was checked against a thing or template that has changed since; nothing of it is stored. */
export class StaleSubjectError extends Error {
  override readonly name = 'StaleSubjectError';
}

/** Work over every batch of a transaction, run in it after the batches' own `after` work. */
export type TransactionWork = (tx: Tx, batches: readonly IngestBatch[]) => Promise<void>;

interface Queued {
  batch: IngestBatch;
  size: number;
  /** When it was handed to the writer (Date.now()). */
  arrived: number;
  resolve: (stored: number) => void;
  reject: (error: unknown) => void;
}

export interface EventWriterOptions {
  /** Rows that make a transaction worth committing at once. */
  batchRows?: number;
  /**
   * The same while organisations share the writer (shares on; batches of several wait, or another's
   * came within the last second): transactions are shorter.
   */
  sharedBatchRows?: number;
  /**
   * The least time between the starts of two transactions (ms). A write to a writer that started none
   * for as long goes at once; others wait for that time to pass, and share a transaction.
   */
  startSpacingMs?: number;
  /** Rows waiting (or being written) beyond which new work is refused. */
  maxPendingRows?: number;
  /**
   * How long a batch may wait to be committed (ms): one still waiting for its transaction then is
   * refused, and a transaction's statements are abandoned (store/faults.ts, withStoreDeadline) once
   * its oldest batch has waited that long, so that a database that hangs turns into 503s, not requests
   * that hang. Unbounded when not given.
   */
  writeTimeoutMs?: number;
  /** Runs in each transaction once its batches are written (rule evaluation). */
  process?: TransactionWork;
  /**
   * Runs after each transaction commits, before its requests are answered (compaction of every
   * event at once, EVENT_COMPACTION_AGE=0); what it throws is told to `onCommittedError`, the events
   * being stored.
   */
  committed?: (batches: readonly IngestBatch[]) => Promise<void>;
  onCommittedError?: (error: unknown) => void;
  /**
   * Transactions under way at once. On PostgreSQL one inserts its events while another commits. They
   * lock the rows they share in one order, as transactions of several instances do: rollup slots, then
   * things, then rule states. So a transaction with events of a thing another one also has waits at
   * that thing's row for the other to commit, and its rules see the other's rule states. By default 2
   * on PostgreSQL, and 1 on SQLite, which has one connection.
   */
  concurrency?: number;
  /**
   * Whether the queue is shared fairly between organisations, and between the sources inside each,
   * once it holds half of what it may (fair-share.ts; docs/operations.md, "Admission of events").
   * Without it, batches are taken first come, first served up to the limit. On by default.
   */
  fairShare?: boolean;
}

/** Why work is refused while as many rows wait as may. */
export const STORE_BEHIND = 'the store is behind; send again shortly';

/** Why a batch is refused whose organisation or source holds its share of a busy writer. */
export const shareRefusalMessage = (who: ShareRefusal): string =>
  who === 'organisation'
    ? "server busy: the organisation's events take their share of the event writer; send again shortly"
    : "server busy: this client's events take their share of its organisation's part of the event writer; send again shortly";

/** The source of batches that name none. */
const ANY_SOURCE = '';

/** How many times batchRows a transaction may hold to take the first batch of every organisation waiting. */
const ROUND_ROWS = 4;

/**
 * How long transactions stay as short as while several organisations wait (sharedBatchRows) after
 * another organisation's batch arrived, ms. A modest organisation's events come a few at a time, and
 * most arrive while only a flood's batches wait: a transaction of 4,000 rows then held SQLite's
 * connection, and the event loop with it, for 100 to 150 ms, and each such event waited for it.
 */
const SHARED_FOR_MS = 1000;

/** Shares of the rows the writer may hold at which it falls behind, and catches up again. */
const BEHIND_FROM = 0.8;
const BEHIND_UNTIL = 0.5;
/** Share of the rows the writer may hold past which its queue is shared (fair-share.ts). */
const SHARES_FROM = 0.5;

export class EventWriter {
  /** By organisation, served in turns when shares are on (fair-share.ts, TurnQueue); else one lane. */
  private readonly queue = new TurnQueue<Queued>();
  private pendingRows = 0;
  /** Rows in the queue, not yet taken by a transaction. */
  private queuedRows = 0;
  /** Transactions under way. */
  private active = 0;
  /** The next transaction's start, when due later (`timer`) or after this turn of the event loop (`soon`). */
  private timer: NodeJS.Timeout | undefined;
  private soon: NodeJS.Immediate | undefined;
  /** When the last transaction started (performance.now()). */
  private lastStart = Number.NEGATIVE_INFINITY;
  private readonly batchRows: number;
  private readonly sharedBatchRows: number;
  private readonly startSpacingMs: number;
  private readonly maxPendingRows: number;
  private readonly writeTimeoutMs: number | undefined;
  private readonly process: TransactionWork | undefined;
  private readonly committed: EventWriterOptions['committed'];
  private readonly onCommittedError: (error: unknown) => void;
  private readonly concurrency: number;
  private behindNow = false;
  private readonly behindListeners = new Set<(behind: boolean) => void>();
  /** Work waiting for a turn (`turn`). */
  private readonly turns: (() => void)[] = [];
  private readonly shares: FairShare | undefined;
  /** The last organisation to hand the writer a batch, and when (performance.now()). */
  private lastOrganisation: string | undefined;
  private lastOrganisationAt = Number.NEGATIVE_INFINITY;
  /** When another organisation than the last one last handed it a batch. */
  private otherOrganisationAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: Store,
    options: EventWriterOptions = {},
  ) {
    this.batchRows = options.batchRows ?? 4000;
    this.sharedBatchRows = Math.min(this.batchRows, options.sharedBatchRows ?? 1000);
    this.startSpacingMs = options.startSpacingMs ?? 2;
    this.maxPendingRows = options.maxPendingRows ?? 100_000;
    this.writeTimeoutMs = options.writeTimeoutMs;
    this.process = options.process;
    this.committed = options.committed;
    this.onCommittedError = options.onCommittedError ?? (() => undefined);
    this.concurrency = options.concurrency ?? (store.engine === 'postgres' ? 2 : 1);
    this.shares =
      options.fairShare === false
        ? undefined
        : new FairShare({ capacity: this.maxPendingRows, softMark: this.maxPendingRows * SHARES_FROM });
  }

  /** Whether the queue is shared fairly (`fairShare`): then nothing upstream should refuse for it being behind. */
  get fair(): boolean {
    return this.shares !== undefined;
  }

  /** Requests refused because their organisation or source held its share, since the start. */
  shareRefusals = 0;

  /** Whether new work is refused now: as many rows wait as may. */
  /** Rows waiting or being written now. */
  get pending(): number {
    return this.pendingRows;
  }

  /** Requests refused because the store was behind, since the start. */
  refusals = 0;

  refusing(): boolean {
    return this.pendingRows >= this.maxPendingRows;
  }

  /**
   * Calls `listener` each time the writer falls behind (four fifths of the rows it may hold wait) or
   * has caught up again (half of them); returns the function that stops it. Whoever refuses work
   * upstream of the writer on it (the MQTT device endpoint) then refuses before the writer must, and
   * not in bursts at its limit: what it lets through while behind would be refused later and slower.
   */
  onBehindChange(listener: (behind: boolean) => void): () => void {
    this.behindListeners.add(listener);
    return () => this.behindListeners.delete(listener);
  }

  private noteBehind(): void {
    // With shares, behind from where they apply: from then on each MQTT connection has at most one
    // message on the server thread (mqtt/inbound-flow.ts, fairWhileBehind), which shares never reach
    // four fifths to tell.
    const from = this.shares ? SHARES_FROM : BEHIND_FROM;
    const until = this.shares ? SHARES_FROM / 2 : BEHIND_UNTIL;
    const behind = this.behindNow
      ? this.pendingRows > this.maxPendingRows * until
      : this.pendingRows >= this.maxPendingRows * from;
    if (behind === this.behindNow) return;
    this.behindNow = behind;
    for (const listener of this.behindListeners) listener(behind);
  }

  /**
   * Resolves once the batch is committed, with how many of its events were stored: not those that
   * arrived already expired (docs/storage.md, "Retention"), which are acknowledged but not kept. Rejects
   * if it could not be committed, and nothing of it is stored.
   */
  write(batch: IngestBatch): Promise<number> {
    const size = Math.max(1, batch.events.length + (batch.heartbeats?.size ?? 0));
    const organisationKey = batch.subject.organisationKey;
    const source = batch.source ?? ANY_SOURCE;
    const refused = this.refusal(organisationKey, source, size);
    if (refused) return Promise.reject(sendAgainLater(refused));
    this.shares?.take(organisationKey, source, size);
    if (this.shares) this.noteOrganisation(organisationKey);
    this.pendingRows += size;
    this.noteBehind();
    return new Promise<number>((resolve, reject) => {
      this.queue.push(this.shares ? organisationKey : ANY_SOURCE, {
        batch,
        size,
        arrived: Date.now(),
        resolve,
        reject,
      });
      this.queuedRows += size;
      this.schedule();
    });
  }

  /**
   * Refuses at once, with the answer `write` would give now, a batch of `size` rows the writer would
   * not take: called before the batch's things are looked up and its events checked, so that a flood
   * refused costs no reads of the store (the batch is asked again when written).
   */
  admit(organisationKey: string, source: string | undefined, size: number): void {
    const refused = this.refusal(organisationKey, source ?? ANY_SOURCE, Math.max(1, size));
    if (refused) throw sendAgainLater(refused);
  }

  /**
   * Why a batch of `size` rows of an organisation's source would be refused now (the 503's message,
   * counted as a refusal), or undefined when it would be taken. Without an error made: the MQTT
   * endpoint and HTTP admission ask it for every message or request of a flood.
   */
  refusal(organisationKey: string, source: string, size: number): string | undefined {
    if (this.pendingRows > 0 && this.pendingRows + size > this.maxPendingRows) {
      this.refusals++;
      return STORE_BEHIND;
    }
    const share = this.shares?.refusal(organisationKey, source, size, this.pendingRows);
    if (share) {
      this.refusals++;
      this.shareRefusals++;
      return shareRefusalMessage(share);
    }
    return undefined;
  }

  /**
   * Runs `work` in a turn of the writer's own: in place of one of its transactions, after the one
   * under way commits, and before the next. On SQLite's one connection the writer's transactions and
   * other writes to the same tables (the retention sweeper's deletes) then alternate, each waiting for
   * at most one of the other's, instead of queueing behind each other on the connection; a queue of
   * events never waits for more than one turn. `work` should be short: events wait for all of it.
   */
  async turn<T>(work: () => Promise<T>): Promise<T> {
    await new Promise<void>((resolve) => {
      this.turns.push(resolve);
      this.grantTurn();
    });
    try {
      return await work();
    } finally {
      this.active--;
      // The events that waited during the turn go first, then the next turn.
      if (this.queue.length > 0) void this.flush();
      else this.grantTurn();
    }
  }

  private grantTurn(): void {
    if (this.active >= this.concurrency) return;
    const next = this.turns.shift();
    if (!next) return;
    this.active++;
    next();
  }

  /** Waits for everything queued to be written. */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.active > 0) {
      await this.flush();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Refuses a batch that waited its whole time for a transaction, taken out of the queue. */
  private expire(queued: Queued): void {
    this.queuedRows -= queued.size;
    this.pendingRows -= queued.size;
    this.release(queued);
    this.refusals++;
    this.noteBehind();
    queued.reject(sendAgainLater(STORE_SLOW));
  }

  private release(queued: Queued): void {
    this.shares?.give(queued.batch.subject.organisationKey, queued.batch.source ?? ANY_SOURCE, queued.size);
  }

  private noteOrganisation(key: string): void {
    if (key !== this.lastOrganisation) {
      this.otherOrganisationAt = this.lastOrganisationAt;
      this.lastOrganisation = key;
    }
    this.lastOrganisationAt = performance.now();
  }

  /** Whether organisations share the writer: batches of several wait, or another's came within SHARED_FOR_MS. */
  private shared(): boolean {
    return this.queue.lanesWaiting > 1 || performance.now() - this.otherOrganisationAt < SHARED_FOR_MS;
  }

  /** Runs a transaction under the deadline of its oldest batch, when the writer has one. */
  private bounded<T>(oldest: number, work: () => Promise<T>): Promise<T> {
    if (this.writeTimeoutMs === undefined) return work();
    return withStoreDeadline(oldest + this.writeTimeoutMs - Date.now(), work);
  }

  private schedule(): void {
    if (this.active >= this.concurrency) return;
    const wait = this.lastStart + this.startSpacingMs - performance.now();
    // A transaction's worth of rows, or a first write since the spacing passed, goes with what the
    // current turn of the event loop still brings; the rest wait out the spacing.
    if (this.queuedRows >= this.batchRows || wait <= 0) {
      this.cancelTimers();
      this.soon ??= setImmediate(() => void this.flush());
    } else {
      this.timer ??= setTimeout(() => void this.flush(), wait);
    }
  }

  private cancelTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.soon) clearImmediate(this.soon);
    this.soon = undefined;
  }

  private async flush(): Promise<void> {
    this.cancelTimers();
    if (this.active >= this.concurrency || this.queue.length === 0) return;
    this.active++;
    try {
      while (this.queue.length > 0) {
        const taken: Queued[] = [];
        let rows = 0;
        let oldest = Number.POSITIVE_INFINITY;
        const now = Date.now();
        // Every organisation with batches waiting has its part of the transaction (fair-share.ts,
        // TurnQueue.take), and its first batch however large, up to ROUND_ROWS of batchRows: one
        // flooding with bulks as large as a transaction does not keep another's events waiting.
        // Shorter while organisations share the writer: each one's events wait less for a turn of the
        // event loop (on SQLite a transaction holds it), for a little of the writer's throughput.
        const limit = this.shared() ? this.sharedBatchRows : this.batchRows;
        for (const next of this.queue.take(limit, limit * ROUND_ROWS, (q) => q.size)) {
          // A batch with less than a third of its time left is refused rather than written: the
          // transaction must commit within the time of its oldest batch, and one about to expire would
          // cut it short for the others (an organisation's single event, taking its turn beside a
          // flood's batches that waited long).
          if (this.writeTimeoutMs !== undefined && now - next.arrived >= (this.writeTimeoutMs * 2) / 3) {
            this.expire(next);
            continue;
          }
          taken.push(next);
          rows += next.size;
          // In turns the first taken is not always the oldest.
          oldest = Math.min(oldest, next.arrived);
        }
        if (taken.length === 0) continue;
        this.queuedRows -= rows;
        this.lastStart = performance.now();
        try {
          const batches = taken.map((q) => q.batch);
          let stale = new Set<IngestBatch>();
          const stored = new Map<IngestBatch, number>();
          await this.bounded(oldest, () =>
            this.store.transaction(async (tx) => {
              stale = await staleBatches(tx, batches);
              const fresh = batches.filter((b) => !stale.has(b));
              const current = await withoutExpired(tx, fresh, Date.now());
              for (let i = 0; i < fresh.length; i++) {
                stored.set(fresh[i] as IngestBatch, (current[i] as IngestBatch).events.length);
              }
              await writeBatches(tx, current);
              // Told before the alerts the rules raise on them.
              if (this.store.changes.wanted('Event')) await noteEvents(tx, current);
              if (this.process) await this.process(tx, current);
            }),
          );
          if (this.committed) {
            await this.committed(batches.filter((b) => !stale.has(b))).catch(this.onCommittedError);
          }
          for (const q of taken) {
            if (stale.has(q.batch)) q.reject(new StaleSubjectError('a thing or its template changed; check again'));
            else q.resolve(stored.get(q.batch) ?? 0);
          }
        } catch (error) {
          for (const q of taken) q.reject(error);
        } finally {
          this.pendingRows -= rows;
          for (const q of taken) this.release(q);
          this.noteBehind();
        }
        // Lets what arrived during that transaction go first. On SQLite a transaction runs without
        // giving way (one connection, synchronous statements), so back-to-back transactions would keep
        // a delivery's answer unread, and its result unrecorded, until the queue is empty: a crash in
        // between sends it again (docs/rules.md, "Deliveries").
        if (this.turns.length > 0) break;
        if (this.queue.length > 0) await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.active--;
      // A turn waiting takes the place of the next transaction; it runs the rest of the queue after it.
      this.grantTurn();
    }
  }
}

/** Why a batch is refused that waited longer than the writer may keep it (writeTimeoutMs). */
export const STORE_SLOW = 'the store did not answer in time; send again shortly';

/**
 * The batches whose subject no longer holds: a thing that is gone or has another key or template, or
 * whose template's metrics are not those the events were checked against. One statement whatever the
 * number of batches (store/dialect.ts, RowsStatement): it answers the positions of the things that no
 * longer hold.
 */
const staleThingsOf = new RowsStatement(
  ['bigint', 'bigint', 'text', 'text', 'text'],
  () => `select v.column1 from v
    where not exists (select 1 from things t
      join thing_templates tt on tt.thing_template_key = t.thing_template_key
      where t.thing_id = v.column2 and t.thing_key = v.column3 and t.thing_template_key = v.column4
        and tt.metrics = v.column5)`,
);

async function staleBatches(tx: Tx, batches: IngestBatch[]): Promise<Set<IngestBatch>> {
  const stale = new Set<IngestBatch>();
  // Batches of one thing share the object their requests resolved it to (the ingest cache's) while it
  // is cached: each such object is checked once, without hashing its template's metrics text.
  const things = new Map<SubjectThing, { id: number; thing: SubjectThing; batches: IngestBatch[] }>();
  for (const b of batches) {
    for (const [id, thing] of b.subject.things) {
      const seen = things.get(thing);
      if (seen) seen.batches.push(b);
      else things.set(thing, { id, thing, batches: [b] });
    }
  }
  if (things.size === 0) return stale;
  const rows = [...things.values()];
  const gone = await staleThingsOf.run<{ column1: number | string }>(tx, [
    rows.map((_, i) => i),
    rows.map((r) => r.id),
    rows.map((r) => r.thing.thing_key),
    rows.map((r) => r.thing.thing_template_key),
    rows.map((r) => r.thing.metrics),
  ]);
  for (const { column1 } of gone) {
    for (const b of (rows[Number(column1)] as (typeof rows)[number]).batches) stale.add(b);
  }
  return stale;
}

/** A stored event as the change feed tells it, for realtime push (docs/realtime.md). */
export interface EventNotice {
  thing_key: string;
  thing_template_key: string;
  /** When it happened (ms). */
  timestamp: number;
  data: Record<string, unknown>;
}

/** Tells the change feed the transaction's events, once it commits: one change per organisation. */
async function noteEvents(tx: Tx, batches: IngestBatch[]): Promise<void> {
  const byOrganisation = new Map<string, EventNotice[]>();
  for (const b of batches) {
    let stored = byOrganisation.get(b.subject.organisationKey);
    if (!stored) {
      stored = [];
      byOrganisation.set(b.subject.organisationKey, stored);
    }
    for (const e of b.events) {
      const thing = b.subject.things.get(e.thingId) as SubjectThing;
      stored.push({
        thing_key: thing.thing_key,
        thing_template_key: thing.thing_template_key,
        timestamp: e.timestamp,
        data: e.data,
      });
    }
  }
  for (const [organisationKey, detail] of byOrganisation) {
    if (detail.length === 0) continue;
    await noteChange(tx, { entityType: 'Event', organisationKey, entityKey: null, action: 'create', detail });
  }
}

async function writeBatches(tx: Tx, batches: IngestBatch[]): Promise<void> {
  const now = Date.now();
  const events = batches.flatMap((b) => b.events);
  if (events.length > 0) {
    await insertEvents(tx, events, now);
    // Each event counts in its slot's rollup for the metrics its thing's template had when checked.
    const counter = new SlotCounter();
    const templates = new Map<number, string>();
    for (const b of batches) {
      for (const e of b.events) {
        const thing = b.subject.things.get(e.thingId);
        if (!thing) throw new Error(`event of thing ${e.thingId} outside its batch's subject`);
        counter.add(e.thingId, metricPaths(thing.metrics), e.timestamp, e.data);
        templates.set(e.thingId, thing.thing_template_key);
      }
    }
    const counted = counter.rows();
    await addToRollups(tx, counted);
    // And in their templates' rollups, under the template checked in this transaction (staleBatches).
    await addToTemplateRollups(
      tx,
      templateSlotsOf(counted, (thingId) => templates.get(thingId) as string),
    );
  }
  // Each thing's newest event (by its own time) becomes its last_event; any event makes it heard from.
  const touched = new Map<number, ThingTouch>();
  for (const e of events) {
    const lag = now - e.timestamp;
    const touch = touched.get(e.thingId);
    if (!touch) {
      touched.set(e.thingId, { newest: e, count: 1, waypoint: e.waypoint ?? undefined, lagMin: lag, lagMax: lag });
      continue;
    }
    if (e.timestamp >= touch.newest.timestamp) touch.newest = e;
    touch.count++;
    if (e.waypoint) touch.waypoint = e.waypoint;
    if (lag < touch.lagMin) touch.lagMin = lag;
    else if (lag > touch.lagMax) touch.lagMax = lag;
  }
  if (touched.size > 0) await recordLastEvents(tx, touched, now);
  const heartbeats = new Map<number, number>();
  for (const b of batches) for (const [thingId, at] of b.heartbeats ?? []) heartbeats.set(thingId, at);
  for (const [thingId, at] of heartbeats) await recordHeartbeat(tx, thingId, at);
  for (const b of batches) if (b.after) await b.after(tx);
}
