/**
 * The process's open-file limit (its soft RLIMIT_NOFILE), read from /proc on Linux; undefined where
 * it cannot be read. Every connection holds a file descriptor, so HTTP and MQTT connections together
 * are capped below it with room for the store, outbound calls and logs (core/sockets.ts;
 * docs/configuration.md, MQTT_MAX_CONNECTIONS and HTTP_MAX_CONNECTIONS).
 */
import { readFileSync } from 'node:fs';

export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    const value = Number(soft);
    return Number.isInteger(value) && value > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Descriptors kept for everything but clients' connections. */
export const RESERVED_FILES = 512;

/**
 * Of those, the descriptors MQTT connections past the budget may hold while the broker waits for
 * their CONNECT to refuse it with CONNACK 3 (mqtt/endpoint/admission.ts): past it they are closed as soon as
 * they are accepted, and the other half stays for the store, outbound calls and logs.
 */
export const REFUSAL_ROOM = RESERVED_FILES / 2;
