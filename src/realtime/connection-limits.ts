/**
 * How many realtime connections (WebSockets and streams together) one user and one organisation may
 * hold on this instance (docs/realtime.md, "Connections per user and organisation"; docs/configuration.md,
 * REALTIME_MAX_CONNECTIONS_PER_USER and REALTIME_MAX_CONNECTIONS_PER_ORGANISATION), so that one user,
 * or one organisation's script opening connections in a loop, cannot take every connection the server
 * holds from the others.
 *
 * A connection counts against the user behind its token (an API key counts as the user who made it)
 * and against the organisation its token acts in: for an OEM admin signed in to a child organisation,
 * the child, whose data it reads; for an OEM organisation's `is_oem` subscriptions, its own.
 */
import { rateLimited } from '../core/errors.ts';
import type { Principal } from '../core/principal.ts';

export interface ConnectionBounds {
  perUser: number;
  perOrganisation: number;
}

/** Which bound refused a connection, as /metrics labels it. */
export type ConnectionRefusal = 'user_limit' | 'organisation_limit';

/** Seconds a refused client is told to wait (Retry-After): a place frees only when a connection closes. */
export const REFUSED_RETRY_AFTER_S = 5;

export class ConnectionLimits {
  private readonly byUser = new Map<string, number>();
  private readonly byOrganisation = new Map<string, number>();
  /** Connections refused since the start, by bound. */
  readonly refusals: Record<ConnectionRefusal, number> = { user_limit: 0, organisation_limit: 0 };

  constructor(private readonly bounds: ConnectionBounds) {}

  /**
   * Takes a place for a connection of `principal`, or throws the 429 (`rate_limited`) of the bound it
   * would pass. Answers the function that gives the place back: call it when the connection ends,
   * however it ends; calls after the first do nothing.
   */
  admit(principal: Principal): () => void {
    const user = principal.userKey ?? `device\u0000${principal.accessKey ?? ''}`;
    const organisation = principal.organisationKey;
    if ((this.byUser.get(user) ?? 0) >= this.bounds.perUser) {
      this.refusals.user_limit++;
      throw rateLimited(
        REFUSED_RETRY_AFTER_S,
        `this user already holds ${this.bounds.perUser} realtime connections, the most this server allows; close one first`,
      );
    }
    if ((this.byOrganisation.get(organisation) ?? 0) >= this.bounds.perOrganisation) {
      this.refusals.organisation_limit++;
      throw rateLimited(
        REFUSED_RETRY_AFTER_S,
        `this organisation already holds ${this.bounds.perOrganisation} realtime connections, the most this server allows; close one first`,
      );
    }
    add(this.byUser, user, 1);
    add(this.byOrganisation, organisation, 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      add(this.byUser, user, -1);
      add(this.byOrganisation, organisation, -1);
    };
  }
}

/** Adds `delta` to a count, forgetting it at 0, so that users and organisations gone leave nothing behind. */
function add(counts: Map<string, number>, key: string, delta: number): void {
  const count = (counts.get(key) ?? 0) + delta;
  if (count <= 0) counts.delete(key);
  else counts.set(key, count);
}
