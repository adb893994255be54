/** The things a query covers, with what their templates say about them. */
import { ApiError, notFound } from '../core/errors.ts';
import { inOrganisations } from '../store/filters.ts';
import { QueryCache } from '../store/prepared.ts';
import type { Executor } from '../store/store.ts';
import type { MetricDefinition } from '../templates/presenter.ts';

export interface QueriedThing {
  thing_id: number;
  thing_key: string;
  thing_template_key: string;
  metrics: MetricDefinition[];
  /** Seconds without events that count as idle. */
  idle_timeout: number;
  /** Days its events are kept (its template's, else its organisation's); null: for ever. */
  retention_days: number | null;
  /** Days its organisation keeps rollups; null: for ever. */
  rollup_retention_days: number | null;
}

/**
 * Of the ways a query chooses its things (`thing_keys`, `thing_key`, `group_key`, ...), at most one may
 * be given: else a 400 naming the second, and in its message every one given.
 */
export function checkOneChoice(choices: Record<string, unknown>): void {
  const given = Object.keys(choices).filter((name) => choices[name] !== undefined);
  if (given.length > 1) {
    throw new ApiError(400, [
      { code: 'invalid', param: given[1] as string, message: `only one of ${given.join(', ')} may be given` },
    ]);
  }
}

/** The things named by `thing_keys`, or by `thing_key`, its shorthand for one thing; none: undefined. */
export function namedThingKeys(thingKeys: string[] | undefined, thingKey: string | undefined): string[] | undefined {
  checkOneChoice({ thing_keys: thingKeys, thing_key: thingKey });
  return thingKey === undefined ? thingKeys : [thingKey];
}

/** Compiled once per number of organisations and things named (store/prepared.ts). */
const statements = new QueryCache();

/** The parameter a 404 for a named thing names: the list's, when the things came as `thing_keys`. */
export const namedThingsParam = (thingKeys: string[] | undefined): string =>
  thingKeys === undefined ? 'thing_key' : 'thing_keys';

/**
 * The named things (each must be visible: else a 404 naming `keysParam`), or every visible thing (of a
 * template, if named), by key.
 */
export async function queriedThings(
  db: Executor,
  organisationKeys: string[],
  thingKeys?: string[],
  templateKey?: string,
  keysParam = 'thing_key',
): Promise<QueriedThing[]> {
  const values = { organisations: organisationKeys, things: thingKeys, template: templateKey };
  const rows = await statements.execute(db, '', values, (v) => {
    let query = db
      .selectFrom('things as t')
      .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
      .innerJoin('organisations as o', 'o.organisation_key', 't.organisation_key')
      .select([
        't.thing_id',
        't.thing_key',
        't.thing_template_key',
        'tt.metrics',
        'tt.idle_timeout',
        'o.rollup_retention_days',
      ])
      .select((eb) => eb.fn.coalesce('tt.retention_days', 'o.retention_days').as('retention_days'))
      .where(inOrganisations(v.organisations as string[], 't.organisation_key'));
    const keys = v.things as string[] | undefined;
    if (keys !== undefined) query = query.where('t.thing_key', 'in', keys.length > 0 ? keys : ['']);
    if (v.template !== undefined) query = query.where('t.thing_template_key', '=', v.template as string);
    return query.orderBy('t.thing_key');
  });
  if (thingKeys !== undefined) {
    const found = new Set(rows.map((r) => r.thing_key));
    const missing = thingKeys.find((k) => !found.has(k));
    if (missing !== undefined) throw notFound(`thing ${missing}`, keysParam);
  }
  return rows.map((r) => ({
    ...r,
    metrics: JSON.parse(r.metrics) as MetricDefinition[],
    retention_days: r.retention_days === null ? null : Number(r.retention_days),
    rollup_retention_days: r.rollup_retention_days === null ? null : Number(r.rollup_retention_days),
  }));
}
