/** The things a query covers, with what their templates say about them. */
import { notFound } from '../core/errors.ts';
import { inOrganisations } from '../store/filters.ts';
import type { Executor } from '../store/store.ts';
import type { MetricDefinition } from '../templates/presenter.ts';

export interface QueriedThing {
  thing_id: number;
  thing_key: string;
  metrics: MetricDefinition[];
  /** Seconds without events that count as idle. */
  idle_timeout: number;
}

/** The named things (each must be visible: else 404), or every visible thing, by key. */
export async function queriedThings(
  db: Executor,
  organisationKeys: string[],
  thingKeys?: string[],
): Promise<QueriedThing[]> {
  let query = db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .select(['t.thing_id', 't.thing_key', 'tt.metrics', 'tt.idle_timeout'])
    .where(inOrganisations(organisationKeys, 't.organisation_key'));
  if (thingKeys !== undefined) query = query.where('t.thing_key', 'in', thingKeys.length > 0 ? thingKeys : ['']);
  const rows = await query.orderBy('t.thing_key').execute();
  if (thingKeys !== undefined) {
    const found = new Set(rows.map((r) => r.thing_key));
    const missing = thingKeys.find((k) => !found.has(k));
    if (missing !== undefined) throw notFound(`thing ${missing}`, 'thing_key');
  }
  return rows.map((r) => ({ ...r, metrics: JSON.parse(r.metrics) as MetricDefinition[] }));
}
