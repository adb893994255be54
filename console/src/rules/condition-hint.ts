/**
 * What the rule form says under a condition the API found valid: whether the chosen template has the
 * metrics it reads (docs/expressions.md, "Checking an expression"). A rule may name a metric its
 * template lacks, and saving it is not refused, but on that template's events the condition never
 * holds: a misspelt `temperatur` is said here rather than found when no alert comes.
 */
import type { Template } from '../components/template-select.tsx';

/** The template's metrics named in a hint at most; more are left to the template's page. */
const LISTED = 8;

/** Whether `metric` (a dotted path) is one of `names`, a value inside one, or an object holding one. */
const isKnown = (metric: string, names: string[]) =>
  names.some((name) => name === metric || metric.startsWith(`${name}.`) || name.startsWith(`${metric}.`));

/** The condition's metrics that `template` does not have, in the condition's order. */
function metricsMissing(metrics: string[], template: Template | undefined): string[] {
  if (!template) return [];
  const names = template.metrics.map((m) => m.name);
  return metrics.filter((metric) => !isKnown(metric, names));
}

/** The hint for a valid condition: plain, or naming the metrics `template` lacks and those it has. */
export function validConditionHint(metrics: string[], template: Template | undefined): string {
  const missing = metricsMissing(metrics, template);
  if (!template || missing.length === 0) return 'The condition is valid.';
  const names = template.metrics.map((m) => m.name);
  const quoted = missing.map((m) => `'${m}'`).join(', ');
  const has =
    names.length === 0
      ? 'it has no metrics'
      : `its metrics: ${names.slice(0, LISTED).join(', ')}${names.length > LISTED ? `, and ${names.length - LISTED} more` : ''}`;
  const noun = missing.length === 1 ? 'metric' : 'metrics';
  return `The condition is valid, but the template ${template.name} has no ${noun} ${quoted}, so its things' events never meet it (${has}).`;
}
