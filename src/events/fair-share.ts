/**
 * Fair shares of the event writer's queue (docs/operations.md, "Admission of events"). While the
 * writer holds less than its soft mark, events are taken first come, first served. Past it, each
 * organisation with events in the queue may hold at most an equal share of the queue, and inside an
 * organisation each source (an HTTP client: key pair and address; an MQTT connection) an equal share
 * of the organisation's: a batch that would take its source past its share is refused, and so is one
 * of an organisation past its share from a source holding at least its equal part of what the
 * organisation holds, while everyone under theirs is still taken, up to the writer's own limit.
 *
 * A share counts one more holder than those holding events now (capacity / (n + 1)), so that however
 * the queue is split, room is left for an organisation or source that has nothing in it yet: a device
 * sending one event now and then is never refused because others filled the queue before it came.
 * Only those with events in the queue are remembered, so memory follows the queue, not the number of
 * sources ever seen.
 */

export interface FairShareOptions {
  /** Rows the queue may hold (the writer's limit). */
  capacity: number;
  /** Rows past which shares apply; below it, every batch is taken. */
  softMark: number;
}

/** Why a batch is refused: its organisation or its source holds its share. */
export type ShareRefusal = 'organisation' | 'source';

interface OrganisationHold {
  rows: number;
  /** Rows by source. */
  sources: Map<string, number>;
}

export class FairShare {
  private readonly organisations = new Map<string, OrganisationHold>();

  constructor(private readonly options: FairShareOptions) {}

  /**
   * Whether a batch of `size` rows of an organisation's source may join a queue holding `queued` rows:
   * undefined when it may, else who holds its share.
   */
  refusal(organisationKey: string, source: string, size: number, queued: number): ShareRefusal | undefined {
    if (queued + size <= this.options.softMark) return undefined;
    const organisation = this.organisations.get(organisationKey);
    const sourceHeld = organisation?.sources.get(source) ?? 0;
    // A source with nothing queued may always put in one batch: a bulk larger than a share still goes,
    // and a device sending now and then is never refused for what others of its organisation hold.
    if (organisation === undefined || sourceHeld === 0) return undefined;
    const organisationShare = this.options.capacity / (this.organisations.size + 1);
    // An organisation past its share (its sources took more while the queue was short, or many of
    // them each hold a batch) waits for those of its sources holding at least their equal part of it.
    if (organisation.rows + size > organisationShare && sourceHeld >= organisation.rows / organisation.sources.size) {
      return 'organisation';
    }
    if (sourceHeld + size > organisationShare / (organisation.sources.size + 1)) return 'source';
    return undefined;
  }

  /** A batch joined the queue. */
  take(organisationKey: string, source: string, size: number): void {
    let organisation = this.organisations.get(organisationKey);
    if (!organisation) {
      organisation = { rows: 0, sources: new Map() };
      this.organisations.set(organisationKey, organisation);
    }
    organisation.rows += size;
    organisation.sources.set(source, (organisation.sources.get(source) ?? 0) + size);
  }

  /** A batch left the queue (committed or refused); those holding nothing more are forgotten. */
  give(organisationKey: string, source: string, size: number): void {
    const organisation = this.organisations.get(organisationKey);
    if (!organisation) return;
    organisation.rows -= size;
    const left = (organisation.sources.get(source) ?? 0) - size;
    if (left > 0) organisation.sources.set(source, left);
    else organisation.sources.delete(source);
    if (organisation.rows <= 0 || organisation.sources.size === 0) this.organisations.delete(organisationKey);
  }

  /** Organisations and sources remembered now (tests: memory follows the queue). */
  get remembered(): { organisations: number; sources: number } {
    let sources = 0;
    for (const organisation of this.organisations.values()) sources += organisation.sources.size;
    return { organisations: this.organisations.size, sources };
  }
}

/**
 * A queue served in turns: each key (an organisation) has its own first-in first-out lane, and the
 * lanes give one item each in turn. A transaction then takes a batch of every organisation with
 * batches waiting before a second of any, so an organisation's single event does not wait behind
 * another's tens of thousands; each organisation's own order (and so each thing's) is kept.
 */
export class TurnQueue<T> {
  /** Lanes by key, in turn order: the lane served next first (a Map keeps insertion order). */
  private readonly lanes = new Map<string, T[]>();
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(key: string, item: T): void {
    const lane = this.lanes.get(key);
    if (lane) lane.push(item);
    else this.lanes.set(key, [item]);
    this.count++;
  }

  /** The item served next. */
  peek(): T | undefined {
    for (const lane of this.lanes.values()) return lane[0];
    return undefined;
  }

  /** Takes the item served next; its lane goes to the end of the turn. */
  shift(): T | undefined {
    for (const [key, lane] of this.lanes) {
      const item = lane.shift() as T;
      this.count--;
      this.lanes.delete(key);
      if (lane.length > 0) this.lanes.set(key, lane);
      return item;
    }
    return undefined;
  }
}
