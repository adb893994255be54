import { sql } from 'kysely';
import type { ListQuery } from '../core/list-query.ts';
import { engineOfDb, lockRows } from '../store/dialect.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { AlertRow, AlertStatus } from '../store/tables.ts';
import { ALERT_TYPE_NAMES } from './schemas.ts';

export interface AlertFilter {
  organisationKeys: string[];
  thingKey?: string | undefined;
  instructionKey?: string | undefined;
  alertTypes?: number[] | undefined;
  statuses?: AlertStatus[] | undefined;
  ruleKey?: string | undefined;
}

const SORTABLE = ['timestamp', 'created_at', 'updated_at', 'alert_type', 'thing_key', 'message'];

/** The name of an alert type as search sees it: alert_type_string is derived, not stored. */
const alertTypeString = sql`(case alert_type ${sql.join(
  ALERT_TYPE_NAMES.map((name, type) => sql`when ${sql.lit(type)} then ${sql.lit(name)}`),
  sql` `,
)} end)`;

export function listAlerts(db: Executor, filter: AlertFilter, list: ListQuery) {
  return fetchPage<AlertRow>(
    db,
    {
      name: 'alerts',
      values: {
        organisations: filter.organisationKeys,
        thing: filter.thingKey,
        instruction: filter.instructionKey,
        // An empty list filters nothing, as an absent one (`in ()` is a syntax error on PostgreSQL).
        types: filter.alertTypes?.length ? filter.alertTypes : undefined,
        statuses: filter.statuses?.length ? filter.statuses : undefined,
        rule: filter.ruleKey,
      },
      build: (d, v) => {
        // A derived table, so search can match the type's name like a column.
        let query = d
          .selectFrom((eb) =>
            eb
              .selectFrom('alerts')
              .selectAll()
              .select(alertTypeString.as('alert_type_string'))
              .where(inOrganisations(v.organisations as string[]))
              .as('alerts'),
          )
          .selectAll();
        if (v.thing !== undefined) query = query.where('thing_key', '=', v.thing as string);
        if (v.instruction !== undefined) query = query.where('instruction_key', '=', v.instruction as string);
        if (v.types !== undefined) query = query.where('alert_type', 'in', v.types as number[]);
        if (v.statuses !== undefined) query = query.where('status', 'in', v.statuses as AlertStatus[]);
        if (v.rule !== undefined) query = query.where('rule_key', '=', v.rule as string);
        return query;
      },
      columns: {
        sort: Object.fromEntries(SORTABLE.map((f) => [f, f])),
        key: 'alert_key',
        search: ['message', 'thing_key', 'thing_name', 'alert_type_string'],
      },
    },
    list,
  );
}

/** An alert of these organisations; with `lock`, locked until the transaction ends. */
export function findAlert(
  db: Executor,
  organisationKeys: string[],
  alertKey: string,
  options: { lock?: boolean } = {},
): Promise<AlertRow | undefined> {
  const query = db
    .selectFrom('alerts')
    .selectAll()
    .where('alert_key', '=', alertKey)
    .where(inOrganisations(organisationKeys));
  return (options.lock ? query.$call(lockRows(engineOfDb(db))) : query).executeTakeFirst();
}

export async function insertAlert(db: Executor, row: AlertRow): Promise<void> {
  await db.insertInto('alerts').values(row).execute();
}

export async function updateAlert(db: Executor, alertKey: string, changes: Partial<AlertRow>): Promise<void> {
  await db.updateTable('alerts').set(changes).where('alert_key', '=', alertKey).execute();
}

/** Sets an alert's status fields if its status is one of `from`; answers whether it did. */
export async function changeStatus(
  db: Executor,
  alertKey: string,
  from: readonly AlertStatus[],
  changes: Partial<AlertRow>,
): Promise<boolean> {
  const result = await db
    .updateTable('alerts')
    .set(changes)
    .where('alert_key', '=', alertKey)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
