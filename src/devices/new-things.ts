/**
 * Registers of new things, made together: those of one organisation that arrive within BATCH_MS of
 * the first go into one transaction (things/service.ts, createThings), each with its audit record.
 * A fleet that connects for the first time registers thousands of things a second; one transaction
 * each (on SQLite a commit and its flush to disk each) took the server's thread whole at 2,000 a
 * second (docs/benchmarks-history.md, "fleet: the figures before 2026-11-29 night").
 *
 * Should the shared transaction fail (a key made meanwhile by another register or instance, a store
 * fault), each register is made on its own, and answers as it would have alone.
 */
import type { Actor } from '../audit/recorder.ts';
import type { Store } from '../store/store.ts';
import { createThing, createThings, type ThingInput } from '../things/service.ts';

interface NewThing {
  actor: Actor;
  input: ThingInput & { thing_key: string };
  resolve: () => void;
  reject: (error: unknown) => void;
  /** Settles as `resolve` and `reject` are called. */
  made: Promise<void>;
}

/**
 * How long the first register of a new thing waits for others to share its transaction, ms. The
 * commit, on SQLite its flush to disk, is most of a transaction's cost: at 2,000 new things a second,
 * one transaction per turn of the event loop held a few of them each.
 */
const BATCH_MS = 10;

/** Registers of one organisation waiting for their transaction, by thing key. */
type Waiting = Map<string, NewThing>;

export class NewThings {
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly store: Store) {}

  /**
   * Makes the thing with the others of its organisation due with it. Resolves true once it is made,
   * false when another register of the same key among them made it (then it exists: the caller
   * treats this one as a register of a thing that exists); rejects as createThing would.
   */
  create(actor: Actor, organisationKey: string, input: ThingInput & { thing_key: string }): Promise<boolean> {
    let waiting = this.waiting.get(organisationKey);
    if (!waiting) {
      const batch: Waiting = new Map();
      waiting = batch;
      this.waiting.set(organisationKey, batch);
      setTimeout(() => void this.make(organisationKey, batch), BATCH_MS);
    }
    // Made by the first of them, or not at all: this one then fails as that one did.
    const same = waiting.get(input.thing_key);
    if (same) return same.made.then(() => false);
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const made = new Promise<void>((done, failed) => {
      resolve = done;
      reject = failed;
    });
    waiting.set(input.thing_key, { actor, input, resolve, reject, made });
    return made.then(() => true);
  }

  private async make(organisationKey: string, batch: Waiting): Promise<void> {
    this.waiting.delete(organisationKey);
    const items = [...batch.values()];
    // Failed together, each on its own below: a key taken or a fault answers only the registers it concerns.
    const together =
      items.length > 1 &&
      (await createThings(this.store, organisationKey, items).then(
        () => true,
        () => false,
      ));
    if (together) {
      for (const item of items) item.resolve();
      return;
    }
    await Promise.all(
      items.map((item) =>
        createThing(this.store, item.actor, organisationKey, item.input).then(
          () => item.resolve(),
          (error: unknown) => item.reject(error),
        ),
      ),
    );
  }
}
