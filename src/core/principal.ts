/**
 * Who is making a request, as every capability sees it: a signed-in user or a device key pair.
 */
export interface Principal {
  kind: 'user' | 'device';
  /** The signed-in user; null for a device. */
  userKey: string | null;
  /** Recorded as `user_name` in audit trails. */
  userName: string;
  roleKey: string;
  roleName: string;
  accountAdmin: boolean;
  abilities: ReadonlySet<number>;
  /** The organisation the request acts in. */
  organisationKey: string;
  organisationIsOem: boolean;
  /** The user's time zone (IANA), used when a request gives none. */
  timeZone: string;
}
