/**
 * Outbound calls of notification actions must not reach the server's own network by default
 * (docs/configuration.md, "Notification deliveries"): a host that resolves to a loopback, private, link-local, unique-local or unspecified address is
 * refused unless ALLOW_PRIVATE_WEBHOOKS=true. The check runs in the connection's own DNS lookup, so the
 * address checked is the address connected to (no second lookup to rebind).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // Unspecified, loopback and the IPv4-compatible addresses; NAT64's well-known prefix (an IPv4
  // address of any kind behind it).
  ['::', 96],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** Whether an address is one outbound calls may not reach by default. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return blocked.check(mapped[1], 'ipv4');
  return blocked.check(address, 'ipv6');
}

/**
 * A delivery no later attempt can make: the action's address is refused or unusable as it stands. It
 * fails at once instead of being retried (docs/configuration.md, "Notification deliveries").
 */
export class UndeliverableError extends Error {}

/** Whether `error`, or an error it was caused by, is an UndeliverableError. */
export function isUndeliverable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth += 1) {
    if (cause instanceof UndeliverableError) return true;
  }
  return false;
}

export class PrivateAddressError extends UndeliverableError {
  readonly code = 'EPRIVATEADDRESS';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for sockets that refuses private addresses. */
export function guardedLookup(hostname: string, options: object, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const list = addresses as LookupAddress[];
    // A name without addresses may have some at the next attempt.
    if (list.length === 0) return callback(new Error(`${hostname} resolves to no address`), []);
    if (list.some((a) => isPrivateAddress(a.address))) {
      return callback(
        // The address itself is left out: delivery errors are shown to the action's readers, who need
        // not learn what the server's own network's names resolve to.
        new PrivateAddressError(
          `${hostname} is not called: it resolves to a private or loopback address (set ALLOW_PRIVATE_WEBHOOKS=true to allow)`,
        ),
        [],
      );
    }
    if ((options as { all?: boolean }).all) return callback(null, list);
    const first = list[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
}
