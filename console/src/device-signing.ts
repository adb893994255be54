import { hmac } from '@noble/hashes/hmac';
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

/**
 * Lowercase hex HMAC-SHA256 of `text` under `key`: the MQTT password of a key pair (docs/devices.md).
 * Computed with @noble/hashes rather than crypto.subtle, which browsers give only to secure contexts:
 * the console opened over plain HTTP at a LAN address has none.
 */
export function hmacHex(key: string, text: string): string {
  return bytesToHex(hmac(sha256, utf8ToBytes(key), utf8ToBytes(text)));
}
