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
 * A queue served in turns: each key (an organisation) has its own first-in first-out lane. A
 * transaction takes from every lane with items waiting (`take`): first each lane's equal part of the
 * transaction's rows (at least its first item), then one item of each in turn while there is room. An
 * organisation's single event, or its hundred devices' events of one second, so never wait behind
 * another's tens of thousands, however large that one's batches; each organisation's own order (and so
 * each thing's) is kept.
 */
export class TurnQueue<T> {
  /** Lanes by key, in turn order: the lane served next first (a Map keeps insertion order). */
  private readonly lanes = new Map<string, T[]>();
  private count = 0;

  get length(): number {
    return this.count;
  }

  /** Lanes (organisations) with items waiting. */
  get lanesWaiting(): number {
    return this.lanes.size;
  }

  /**
   * The items of the next transaction, of at most `rows` rows (`sizeOf` each) but for one: each lane
   * gives first what fits in its equal part of `rows`, and at least its first item while the whole
   * stays within `most` rows; then the lanes give one item each in turn while the next fits in `rows`.
   * The lanes served go to the end of the turn, in their order.
   */
  take(rows: number, most: number, sizeOf: (item: T) => number): T[] {
    const taken: T[] = [];
    let total = 0;
    const part = rows / Math.max(1, this.lanes.size);
    for (const [key, lane] of [...this.lanes]) {
      let own = 0;
      while (lane.length > 0) {
        const size = sizeOf(lane[0] as T);
        const fits = own === 0 ? taken.length === 0 || total + size <= most : own + size <= part;
        if (!fits) break;
        taken.push(lane.shift() as T);
        this.count--;
        own += size;
        total += size;
      }
      this.lanes.delete(key);
      if (lane.length > 0) this.lanes.set(key, lane);
    }
    for (let next = this.peek(); next !== undefined && total + sizeOf(next) <= rows; next = this.peek()) {
      total += sizeOf(next);
      taken.push(this.shift() as T);
    }
    return taken;
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
