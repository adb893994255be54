/**
 * Bulk provisioning (docs/api.md, "Importing things"): many things created, or created and updated, in
 * one request from CSV or JSON rows. Each row is checked as POST /api/v3/things checks its `thing`;
 * the rows that pass are written in one transaction, with one audit trail per thing.
 */
import { parse } from 'csv-parse/sync';
import { type Actor, type Change, recordChanges } from '../audit/recorder.ts';
import { ApiError, conflict, type ErrorItem, invalidParam, unknownReference } from '../core/errors.ts';
import { compileParams } from '../core/http/validation.ts';
import { isUniqueViolation, uniqueOr } from '../store/dialect.ts';
import type { Store, Tx } from '../store/store.ts';
import type { ThingTemplateRow } from '../store/tables.ts';
import { findDefaultTemplate, findTemplate } from '../templates/service.ts';
import * as things from './repository.ts';
import { IMPORT_MAX_ROWS, ThingInput as ThingInputSchema } from './schemas.ts';
import {
  changedThingColumns,
  keyTaken,
  newThingColumns,
  type ThingInput,
  thingSnapshot,
  thingsChanged,
  thingsCreated,
} from './service.ts';

/** The columns a CSV header may name, besides `user_defined_properties.<name>`. */
export const CSV_COLUMNS = ['thing_key', 'name', 'description', 'tags', 'thing_template_key', 'bi_directional'];
const PROPERTY_PREFIX = 'user_defined_properties.';

export interface ImportOptions {
  mode: 'create' | 'upsert';
  dryRun: boolean;
  atomic: boolean;
}

export interface ImportFailure {
  row: number;
  errors: ErrorItem[];
}

export interface ImportResult {
  created: number;
  updated: number;
  failed: ImportFailure[];
}

/**
 * The data rows of a CSV text as Thing fields: an empty cell is a field not given, and
 * `user_defined_properties.x` columns make the properties. A header naming another column, or text
 * that is not CSV (a quote not closed, a row of another length), is a 400 naming the line.
 */
export function csvRows(text: string): Record<string, unknown>[] {
  let records: Record<string, string>[];
  try {
    // Parsing stops at the first row past the limit: a body of millions of tiny rows is refused without
    // holding them all (nor the time it takes to read them).
    records = parse(text, {
      bom: true,
      columns: checkHeader,
      skip_empty_lines: true,
      to: IMPORT_MAX_ROWS + 1,
    }) as Record<string, string>[];
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const { lines, message } = error as { lines: number; message: string };
    throw invalidParam('body', `is not valid CSV: line ${lines}: ${message}`);
  }
  if (records.length > IMPORT_MAX_ROWS) {
    throw invalidParam(
      'things',
      `holds more than ${IMPORT_MAX_ROWS} rows; one request may hold at most ${IMPORT_MAX_ROWS}`,
    );
  }
  return records.map((record) => {
    const row: Record<string, unknown> = {};
    // Without a prototype: a column `user_defined_properties.__proto__` is a property the schema refuses.
    const properties: Record<string, string> = Object.create(null);
    for (const [column, value] of Object.entries(record)) {
      if (value === '') continue;
      if (column.startsWith(PROPERTY_PREFIX)) properties[column.slice(PROPERTY_PREFIX.length)] = value;
      // Spreadsheets write TRUE and FALSE.
      else if (column === 'bi_directional' && /^(true|false)$/i.test(value)) row[column] = value.toLowerCase();
      else row[column] = value;
    }
    if (Object.keys(properties).length > 0) row.user_defined_properties = properties;
    return row;
  });
}

function checkHeader(header: string[]): string[] {
  const seen = new Set<string>();
  for (const column of header) {
    if (!CSV_COLUMNS.includes(column) && !column.startsWith(PROPERTY_PREFIX)) {
      throw invalidParam(
        'body',
        `CSV header (line 1) names an unknown column "${column}"; known: ${CSV_COLUMNS.join(', ')}, ${PROPERTY_PREFIX}<name>`,
      );
    }
    if (seen.has(column)) throw invalidParam('body', `CSV header (line 1) names the column "${column}" twice`);
    seen.add(column);
  }
  return header;
}

/** A row as POST /api/v3/things checks its `thing`. */
const validateThing = compileParams(ThingInputSchema);

interface CheckedRow {
  row: number;
  input: ThingInput;
  /** Whether the row named its template (an update keeps the thing's template otherwise). */
  namesTemplate: boolean;
}

/**
 * Imports things into an organisation. Rows that fail are answered with their errors; the others are
 * written (unless `dryRun`, or `atomic` and any row failed) in one transaction.
 */
export async function importThings(
  store: Store,
  actor: Actor,
  organisationKey: string,
  rows: unknown[],
  options: ImportOptions,
): Promise<ImportResult> {
  const checkFailures: ImportFailure[] = [];
  const defaultTemplate = await findDefaultTemplate(store.db, organisationKey);
  const checked = checkRows(rows, defaultTemplate?.thing_template_key, checkFailures);
  // Run again when a key was taken meanwhile: everything it finds is its own.
  const answer = async (tx: Tx): Promise<ImportResult> => {
    const failed = [...checkFailures];
    const creates: CheckedRow[] = [];
    const updates: { row: CheckedRow; before: things.ThingWithTemplate }[] = [];
    const templates = await templatesOf(tx, organisationKey, checked);
    const existing = new Map(
      (
        await things.thingsWithKeys(
          tx,
          checked.flatMap((c) => (c.input.thing_key === undefined ? [] : [c.input.thing_key])),
        )
      ).map((t) => [t.thing_key, t]),
    );
    for (const row of checked) {
      const template = templates.get(row.input.thing_template_key);
      const before = row.input.thing_key === undefined ? undefined : existing.get(row.input.thing_key);
      if (template === undefined) {
        failed.push({
          row: row.row,
          errors: unknownReference('thing_template_key', row.input.thing_template_key).errors,
        });
      } else if (before !== undefined && (options.mode === 'create' || before.organisation_key !== organisationKey)) {
        failed.push({ row: row.row, errors: keyTaken(before.thing_key, 'thing_key').errors });
      } else if (before === undefined) {
        creates.push(row);
      } else {
        updates.push({ row, before });
      }
    }
    failed.sort((a, b) => a.row - b.row);
    if (options.atomic && failed.length > 0) return { created: 0, updated: 0, failed };
    const result = { created: creates.length, updated: updates.length, failed };
    if (options.dryRun) return result;
    await write(tx, actor, organisationKey, creates, updates);
    return result;
  };
  // A key another request takes while this one runs fails the whole transaction: nothing is written,
  // and the import runs again, where the key is taken (a row error, or in upsert mode an update), as
  // on SQLite, whose transactions run one at a time. Past a few rounds, the conflict is answered.
  const again = (rounds: number): Promise<ImportResult> =>
    store.transaction(answer).catch((error: unknown) => {
      if (rounds <= 1 || !isUniqueViolation(error)) throw error;
      return again(rounds - 1);
    });
  return uniqueOr(
    () => again(3),
    () => conflict('thing_key', 'a key of the import was taken by another request meanwhile; nothing was written'),
  );
}

/** Each row checked on its own, and against the rows before it (a key given twice); failures noted. */
function checkRows(rows: unknown[], defaultTemplateKey: string | undefined, failed: ImportFailure[]): CheckedRow[] {
  const checked: CheckedRow[] = [];
  const firstRowOfKey = new Map<string, number>();
  rows.forEach((given, index) => {
    const row = index + 1;
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      failed.push({ row, errors: [{ code: 'invalid', message: 'must be an object of Thing fields' }] });
      return;
    }
    const fields = { ...(given as Record<string, unknown>) };
    const namesTemplate = fields.thing_template_key !== undefined;
    if (!namesTemplate) fields.thing_template_key = defaultTemplateKey;
    let input: ThingInput;
    try {
      input = validateThing(fields) as unknown as ThingInput;
    } catch (error) {
      failed.push({ row, errors: (error as ApiError).errors });
      return;
    }
    const key = input.thing_key;
    if (key !== undefined) {
      const first = firstRowOfKey.get(key);
      if (first !== undefined) {
        failed.push({ row, errors: [{ code: 'conflict', param: 'thing_key', message: `repeats row ${first}` }] });
        return;
      }
      firstRowOfKey.set(key, row);
    }
    checked.push({ row, input, namesTemplate });
  });
  return checked;
}

/** The templates the rows name that the organisation has. */
async function templatesOf(tx: Tx, organisationKey: string, rows: CheckedRow[]) {
  const templates = new Map<string, ThingTemplateRow>();
  for (const key of new Set(rows.map((r) => r.input.thing_template_key))) {
    const template = await findTemplate(tx, [organisationKey], key);
    if (template) templates.set(key, template);
  }
  return templates;
}

async function write(
  tx: Tx,
  actor: Actor,
  organisationKey: string,
  creates: CheckedRow[],
  updates: { row: CheckedRow; before: things.ThingWithTemplate }[],
) {
  const now = Date.now();
  const created = creates.map((c) => newThingColumns(organisationKey, c.input, now));
  await things.insertThings(tx, created);
  await thingsCreated(
    tx,
    organisationKey,
    created.map((c) => c.thing_key),
    now,
  );
  for (const { row, before } of updates) {
    // A row that names no template keeps the thing's.
    const changes = row.namesTemplate ? row.input : { ...row.input, thing_template_key: undefined };
    await things.updateThing(tx, before.thing_key, changedThingColumns(before, changes, {}, now));
  }
  await thingsChanged(
    tx,
    organisationKey,
    updates.map((u) => u.before.thing_key),
    now,
  );
  const written = [...created.map((c) => c.thing_key), ...updates.map((u) => u.before.thing_key)];
  const after = new Map((await things.thingsWithKeys(tx, written)).map((t) => [t.thing_key, t]));
  const changes: Change[] = [];
  for (const { thing_key } of created) {
    const thing = after.get(thing_key) as things.ThingWithTemplate;
    changes.push({
      organisationKey,
      action: 'create',
      entityType: 'Thing',
      entityKey: thing.thing_key,
      entityName: thing.name,
      after: thingSnapshot(thing, now),
    });
  }
  for (const { before } of updates) {
    const thing = after.get(before.thing_key) as things.ThingWithTemplate;
    changes.push({
      organisationKey,
      action: 'update',
      entityType: 'Thing',
      entityKey: thing.thing_key,
      entityName: thing.name,
      before: thingSnapshot(before, now),
      after: thingSnapshot(thing, now),
    });
  }
  await recordChanges(tx, actor, changes, now);
}
