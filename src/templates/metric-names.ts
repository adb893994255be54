/**
 * Where a metric's dotted name lies in an event's data: a value is either a metric's or an object of
 * metrics, never both, so no metric lies inside another (`motor.speed` inside `motor`; docs/api.md,
 * "Thing templates"). Templates refuse such a pair, and ingestion learns none (events/ingest.ts).
 */

/** The names `name` lies inside, outermost first: `m` and `m.x` for `m.x.y`. */
export function holdersOfName(name: string): string[] {
  const holders: string[] = [];
  for (let dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) holders.push(name.slice(0, dot));
  return holders;
}

/** The names that hold other metrics of `names` (`m` for `m.x`). */
export const holdersOf = (names: Iterable<string>): Set<string> => new Set([...names].flatMap(holdersOfName));

/** The metric of `known` that `name` lies inside (`m` for `m.x`), if any. */
export const holderIn = (name: string, known: ReadonlySet<string>): string | undefined =>
  holdersOfName(name).find((holder) => known.has(holder));
