/**
 * The change feed: every change to an entity, told once the transaction that made it has committed,
 * to whoever follows that entity type (docs/architecture.md, "The change feed"). Caches of what
 * changes follow it: they forget what a change makes stale. The store feeds it (store/store.ts,
 * `noteChange`): from the audit recorder for every recorded change, and from the writes that are not
 * audited (a template growing the metrics its things report, built-in roles made for an organisation).
 * On PostgreSQL the store also tells the feeds of the other instances on the same database.
 */

/** The entity types whose changes are recorded and told. */
export type EntityType =
  | 'User'
  | 'Role'
  | 'Group'
  | 'Gateway'
  | 'Thing'
  | 'ThingTemplate'
  | 'Rule'
  | 'NotificationAction'
  | 'Instruction'
  | 'Organisation'
  | 'KeyPair'
  | 'ApiKey'
  | 'Alert'
  | 'Dashboard'
  /** Events stored: told only while someone wants them (`want`), a change per organisation and transaction. */
  | 'Event';

export type ChangeAction = 'create' | 'update' | 'delete';

export interface EntityChange {
  entityType: EntityType;
  /**
   * The organisation the change is recorded in; null when any organisation's entities of the type may
   * have changed (the instance lost its link to the others for a while).
   */
  organisationKey: string | null;
  /** The entity's key; null when several (or unknown) entities of the type changed. */
  entityKey: string | null;
  action: ChangeAction;
  /** Whether another instance made it. */
  remote: boolean;
  /**
   * What the entity is now (or was, when deleted), for realtime push (docs/realtime.md): the entity's
   * snapshot or row, or for `Event` the stored events. Absent when unknown: a change of another
   * instance carries it only while this one wants the type, and only when it is small enough.
   */
  detail?: unknown;
}

export type ChangeListener = (change: EntityChange) => void;

export class ChangeFeed {
  private readonly listeners = new Map<EntityType, Set<ChangeListener>>();
  private catchingUp: (() => void | Promise<void>) | undefined;
  /** How many want the details of each type here. */
  private readonly wants = new Map<EntityType, number>();
  private readonly wantListeners = new Set<() => void>();
  private wantedElsewhere: (type: EntityType) => boolean = () => false;

  /**
   * Says that changes of these types are wanted with their details (realtime push has subscribers to
   * them); answers the function that takes it back. Events are noted to the feed only while wanted,
   * here or by another instance, and details cross to other instances only while they want them.
   */
  want(types: readonly EntityType[]): () => void {
    const before = this.wants.size;
    for (const type of types) this.wants.set(type, (this.wants.get(type) ?? 0) + 1);
    if (this.wants.size !== before) this.wantsChanged();
    let taken = false;
    return () => {
      if (taken) return;
      taken = true;
      const before = this.wants.size;
      for (const type of types) {
        const count = (this.wants.get(type) as number) - 1;
        if (count > 0) this.wants.set(type, count);
        else this.wants.delete(type);
      }
      if (this.wants.size !== before) this.wantsChanged();
    };
  }

  /** The types wanted with their details here. */
  wantedHere(): EntityType[] {
    return [...this.wants.keys()];
  }

  /** Whether changes of the type are wanted with their details, here or by another instance. */
  wanted(type: EntityType): boolean {
    return this.wants.has(type) || this.wantedElsewhere(type);
  }

  /** Whether another instance wants changes of the type with their details. */
  wantedByOthers(type: EntityType): boolean {
    return this.wantedElsewhere(type);
  }

  /** Sets how the feed learns what the other instances want (store/change-link.ts). */
  setWantedElsewhere(wanted: (type: EntityType) => boolean): void {
    this.wantedElsewhere = wanted;
  }

  /** Calls `listener` whenever the types wanted here change; returns the function that stops it. */
  onWantsChange(listener: () => void): () => void {
    this.wantListeners.add(listener);
    return () => this.wantListeners.delete(listener);
  }

  private wantsChanged(): void {
    for (const listener of this.wantListeners) listener();
  }

  /** Sets how the feed learns at once of changes made elsewhere that it may not have been told yet. */
  setCatchUp(catchUp: () => void | Promise<void>): void {
    this.catchingUp = catchUp;
  }

  /**
   * Tells every change committed elsewhere before this call (another instance's, another process's on
   * the same SQLite file) that it was not told yet; a promise when that takes a round trip. For
   * followers that must not trail such a change (answers kept in memory); the others hear of it a
   * little later by themselves.
   */
  catchUp(): void | Promise<void> {
    return this.catchingUp?.();
  }

  /** Calls `listener` with every change to one of `entityTypes`; returns the function that stops it. */
  follow(entityTypes: readonly EntityType[], listener: ChangeListener): () => void {
    for (const type of entityTypes) {
      let set = this.listeners.get(type);
      if (set === undefined) {
        set = new Set();
        this.listeners.set(type, set);
      }
      set.add(listener);
    }
    return () => {
      for (const type of entityTypes) this.listeners.get(type)?.delete(listener);
    };
  }

  /** Tells the followers of each change's type, in order. Called once the changes have committed. */
  tell(changes: readonly EntityChange[]): void {
    for (const change of changes) {
      const set = this.listeners.get(change.entityType);
      if (set === undefined) continue;
      for (const listener of set) {
        // The changes have committed whatever a follower does with them: one that fails is reported
        // and the others are still told.
        try {
          listener(change);
        } catch (error) {
          process.emitWarning(`a follower of the change feed failed: ${(error as Error).stack ?? error}`);
        }
      }
    }
  }

  /** Tells every follower that any entity of any type may have changed, in every organisation. */
  tellEverything(): void {
    const types = [...this.listeners.keys()];
    this.tell(
      types.map((entityType) => ({
        entityType,
        organisationKey: null,
        entityKey: null,
        action: 'update',
        remote: true,
      })),
    );
  }
}
