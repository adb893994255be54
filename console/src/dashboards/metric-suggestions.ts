/** What a widget's form suggests as metrics are typed (widget-form.tsx). */

/**
 * Suggestions for a comma-separated list of metrics as it is typed: the list so far followed by each
 * known metric it does not name yet (a browser's suggestions match the whole field).
 */
export function nextMetrics(typed: string, known: readonly string[]): string[] {
  const cut = typed.lastIndexOf(',');
  const done = cut < 0 ? '' : `${typed.slice(0, cut + 1).trimEnd()} `;
  const named = new Set(
    done
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean),
  );
  return known.filter((metric) => !named.has(metric)).map((metric) => `${done}${metric}`);
}
