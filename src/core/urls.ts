/**
 * Addresses of other services (the database, an MQTT broker) as they may be printed.
 */

/** An address fit to print: its password, if any, replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/(\/\/[^:/@]*):[^@/]*@/, '$1:***@');
  }
}

/** A request's URL as logs show it: a `token` query parameter (realtime streams) is never written. */
export function loggedUrl(url: string): string {
  return url.includes('token=') ? url.replace(/([?&]token=)[^&#]*/g, '$1[redacted]') : url;
}
