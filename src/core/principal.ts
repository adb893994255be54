/**
 * Who is making a request, as every capability sees it: a signed-in user or a device key pair.
 */
export interface Principal {
  kind: 'user' | 'device';
  /** The signed-in user; null for a device. */
  userKey: string | null;
  /** Recorded as `user_name` in audit trails. */
  userName: string;
  /**
   * The e-mail of the user the request acts as (an API key acts as its creator), recorded as who
   * acknowledged or cleared an alert; null for a device.
   */
  email: string | null;
  roleKey: string;
  roleName: string;
  accountAdmin: boolean;
  abilities: ReadonlySet<number>;
  /** The organisation the request acts in. */
  organisationKey: string;
  organisationIsOem: boolean;
  /** The user's time zone (IANA), used when a request gives none. */
  timeZone: string;
  /** A device's key pair (its access key), for its limits; absent for a user. */
  accessKey?: string;
}
