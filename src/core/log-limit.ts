/**
 * Log lines about a limit being hit, at most one a minute for each kind: a limit that thousands of
 * clients run into says so once, not once per client.
 */
export function oncePerMinute<Kind extends string>(
  log: (message: string) => void,
): (kind: Kind, message: string) => void {
  const lastLogged = new Map<Kind, number>();
  return (kind, message) => {
    const now = Date.now();
    if (now - (lastLogged.get(kind) ?? Number.NEGATIVE_INFINITY) < 60_000) return;
    lastLogged.set(kind, now);
    log(message);
  };
}
