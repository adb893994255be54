/**
 * A dashboard's widgets and variables checked and normalised (docs/api.md, "Dashboards"), without the
 * store: each mistake is a 400 naming the field as `dashboard.widgets[2].source.group_key`, widgets
 * counted from 0. What the widgets refer to is collected for the service to look up.
 */
import { ApiError, type ErrorItem } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';

export const WIDGET_TYPES = ['timeseries', 'value', 'gauge', 'things', 'alerts', 'map', 'text'] as const;
export type WidgetType = (typeof WIDGET_TYPES)[number];
export const AGGREGATES = ['avg', 'min', 'max', 'sum', 'count'] as const;
export const ALERT_STATUSES = ['open', 'acknowledged', 'cleared'] as const;

export const MAX_WIDGETS = 50;
/** The longest name a dashboard may have. */
export const MAX_DASHBOARD_NAME = 200;
export const GRID_COLUMNS = 12;
export const MAX_SOURCE_THINGS = 100;
export const MAX_TEXT_BYTES = 8 * 1024;
export const VARIABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const KEY_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const COLOR_PATTERN = /^#[0-9a-fA-F]{6}$/;

export interface Layout {
  x: number;
  y: number;
  w: number;
  h: number;
}

export type Source = { thing_keys: string[] } | { group_key: string } | { thing_template_key: string };

/** A widget as stored and answered: the common fields and those of its type. */
export interface Widget {
  widget_key: string;
  type: WidgetType;
  title: string;
  layout: Layout;
  [field: string]: unknown;
}

export interface Variable {
  name: string;
  thing_template_key: string;
}

/** A key a dashboard names, and the field that names it (for the 400 when it names nothing). */
export interface Reference {
  kind: 'thing' | 'group' | 'thing_template';
  key: string;
  param: string;
}

type Json = Record<string, unknown>;

/** The fields each type allows beyond the common ones, and which of them it requires. */
const TYPE_FIELDS: Record<WidgetType, { required: string[]; optional: string[] }> = {
  timeseries: { required: ['source', 'metrics'], optional: ['aggregate'] },
  value: { required: ['thing_key', 'metric'], optional: ['unit', 'thresholds'] },
  gauge: { required: ['thing_key', 'metric', 'min', 'max'], optional: ['unit', 'thresholds'] },
  things: { required: ['source'], optional: ['metrics'] },
  alerts: { required: ['source'], optional: ['status'] },
  map: { required: ['source'], optional: [] },
  text: { required: ['text'], optional: [] },
};
const COMMON_FIELDS = ['widget_key', 'type', 'title', 'layout'];

const invalid = (param: string, message: string) => new ApiError(400, [{ code: 'invalid', param, message }]);
const required = (param: string) => new ApiError(400, [{ code: 'required', param, message: 'is required' }]);
const unknownField = (param: string) =>
  new ApiError(400, [{ code: 'unknown_field', param, message: 'is not a known field' } satisfies ErrorItem]);

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function onlyFields(value: Json, allowed: readonly string[], param: string): void {
  for (const name of Object.keys(value)) if (!allowed.includes(name)) throw unknownField(`${param}.${name}`);
}

function text(value: unknown, param: string, max: number, min = 0): string {
  if (typeof value !== 'string') throw invalid(param, 'must be a string');
  if (value.length < min || value.length > max) throw invalid(param, `must be ${min} to ${max} characters long`);
  return value;
}

/** Numeric text read as the number it writes, as every numeric parameter is (docs/api.md, "Requests"). */
const DECIMAL = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const asNumber = (value: unknown): unknown =>
  typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value;

function wholeNumber(given: unknown, param: string, min: number, max: number): number {
  const value = asNumber(given);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(param, `must be a whole number from ${min} to ${max}`);
  }
  return value;
}

function finiteNumber(given: unknown, param: string): number {
  const value = asNumber(given);
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(param, 'must be a number');
  return value;
}

function metricNames(value: unknown, param: string, min: number, max: number): string[] {
  if (!Array.isArray(value) || value.length < min || value.length > max) {
    throw invalid(param, `must be an array of ${min} to ${max} metric names`);
  }
  return value.map((m, i) => text(m, `${param}[${i}]`, 200, 1));
}

/** Checks dashboards' widgets and variables; collects what they refer to. */
export class DashboardChecker {
  readonly references: Reference[] = [];

  constructor(private readonly variableNames: ReadonlySet<string>) {}

  /** A thing key, or `$<variable>` naming a variable of the dashboard. */
  private thingKey(value: unknown, param: string): string {
    if (typeof value === 'string' && value.startsWith('$')) {
      if (!this.variableNames.has(value.slice(1)))
        throw invalid(param, `names no variable of the dashboard (${value})`);
      return value;
    }
    if (typeof value !== 'string' || !KEY_PATTERN.test(value)) {
      throw invalid(param, 'must be a thing key (1-64 characters of A-Za-z0-9._-) or $<variable>');
    }
    this.references.push({ kind: 'thing', key: value, param });
    return value;
  }

  private source(value: unknown, param: string): Source {
    if (!isObject(value))
      throw invalid(param, 'must be an object with one of thing_keys, group_key, thing_template_key');
    onlyFields(value, ['thing_keys', 'group_key', 'thing_template_key'], param);
    const given = Object.keys(value);
    if (given.length !== 1) throw invalid(param, 'must have exactly one of thing_keys, group_key, thing_template_key');
    if (value.thing_keys !== undefined) {
      const keys = value.thing_keys;
      if (!Array.isArray(keys) || keys.length < 1 || keys.length > MAX_SOURCE_THINGS) {
        throw invalid(`${param}.thing_keys`, `must be an array of 1 to ${MAX_SOURCE_THINGS} thing keys`);
      }
      return { thing_keys: keys.map((k, i) => this.thingKey(k, `${param}.thing_keys[${i}]`)) };
    }
    const [kind, field] =
      value.group_key !== undefined
        ? (['group', 'group_key'] as const)
        : (['thing_template', 'thing_template_key'] as const);
    const key = value[field];
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw invalid(`${param}.${field}`, 'must be a key');
    this.references.push({ kind, key, param: `${param}.${field}` });
    return field === 'group_key' ? { group_key: key } : { thing_template_key: key };
  }

  private thresholds(value: unknown, param: string): { from: number; color: string }[] {
    if (!Array.isArray(value) || value.length > 20) throw invalid(param, 'must be an array of at most 20 thresholds');
    let previous = Number.NEGATIVE_INFINITY;
    return value.map((t, i) => {
      const at = `${param}[${i}]`;
      if (!isObject(t)) throw invalid(at, 'must be an object {from, color}');
      onlyFields(t, ['from', 'color'], at);
      if (t.from === undefined) throw required(`${at}.from`);
      if (t.color === undefined) throw required(`${at}.color`);
      const from = finiteNumber(t.from, `${at}.from`);
      if (from <= previous) throw invalid(`${at}.from`, 'thresholds must be in ascending order of from');
      previous = from;
      if (typeof t.color !== 'string' || !COLOR_PATTERN.test(t.color)) throw invalid(`${at}.color`, 'must be #rrggbb');
      return { from, color: t.color };
    });
  }

  private layout(value: unknown, param: string): Layout {
    if (!isObject(value)) throw invalid(param, 'must be an object {x, y, w, h}');
    onlyFields(value, ['x', 'y', 'w', 'h'], param);
    for (const name of ['x', 'y', 'w', 'h']) if (value[name] === undefined) throw required(`${param}.${name}`);
    const x = wholeNumber(value.x, `${param}.x`, 0, GRID_COLUMNS - 1);
    const w = wholeNumber(value.w, `${param}.w`, 1, GRID_COLUMNS);
    if (x + w > GRID_COLUMNS) throw invalid(`${param}.w`, `x + w must be at most ${GRID_COLUMNS}`);
    return { x, y: wholeNumber(value.y, `${param}.y`, 0, 10_000), w, h: wholeNumber(value.h, `${param}.h`, 1, 100) };
  }

  /** One widget's type-specific field, checked and normalised. */
  private field(type: WidgetType, name: string, value: unknown, param: string, widget: Json): unknown {
    switch (name) {
      case 'source':
        return this.source(value, param);
      case 'metrics':
        return metricNames(value, param, type === 'timeseries' ? 1 : 0, 8);
      case 'metric':
        return text(value, param, 200, 1);
      case 'aggregate':
        if (!AGGREGATES.includes(value as (typeof AGGREGATES)[number])) {
          throw invalid(param, `must be one of: ${AGGREGATES.join(', ')}`);
        }
        return value;
      case 'thing_key':
        return this.thingKey(value, param);
      case 'unit':
        return text(value, param, 50);
      case 'thresholds':
        return this.thresholds(value, param);
      case 'min':
        return finiteNumber(value, param);
      case 'max': {
        const max = finiteNumber(value, param);
        const min = asNumber(widget.min);
        if (typeof min === 'number' && max <= min) throw invalid(param, 'must be greater than min');
        return max;
      }
      case 'status': {
        const list = typeof value === 'string' ? value.split(',') : value;
        if (!Array.isArray(list) || list.length > 3 || list.some((s) => !ALERT_STATUSES.includes(s))) {
          throw invalid(param, `must be an array of: ${ALERT_STATUSES.join(', ')}`);
        }
        return [...new Set(list as string[])];
      }
      default: {
        const markdown = text(value, param, MAX_TEXT_BYTES);
        if (Buffer.byteLength(markdown) > MAX_TEXT_BYTES)
          throw invalid(param, `must be at most ${MAX_TEXT_BYTES} bytes`);
        return markdown;
      }
    }
  }

  /** One widget; `takenKeys` holds every key given in the dashboard, and those generated so far. */
  widget(value: unknown, param: string, takenKeys: Set<string>): Widget {
    if (!isObject(value)) throw invalid(param, 'must be an object');
    if (value.type === undefined) throw required(`${param}.type`);
    if (!WIDGET_TYPES.includes(value.type as WidgetType)) {
      throw invalid(`${param}.type`, `must be one of: ${WIDGET_TYPES.join(', ')}`);
    }
    const type = value.type as WidgetType;
    const fields = TYPE_FIELDS[type];
    onlyFields(value, [...COMMON_FIELDS, ...fields.required, ...fields.optional], param);
    for (const name of ['title', 'layout', ...fields.required]) {
      if (value[name] === undefined) throw required(`${param}.${name}`);
    }
    let widgetKey: string;
    if (value.widget_key !== undefined) {
      if (typeof value.widget_key !== 'string' || !KEY_PATTERN.test(value.widget_key)) {
        throw invalid(`${param}.widget_key`, 'must be 1-64 characters of A-Za-z0-9._-');
      }
      widgetKey = value.widget_key;
    } else {
      do widgetKey = newKey();
      while (takenKeys.has(widgetKey));
      takenKeys.add(widgetKey);
    }
    const widget: Widget = {
      widget_key: widgetKey,
      type,
      title: text(value.title, `${param}.title`, 200, 1),
      layout: this.layout(value.layout, `${param}.layout`),
    };
    for (const name of [...fields.required, ...fields.optional]) {
      if (value[name] !== undefined) widget[name] = this.field(type, name, value[name], `${param}.${name}`, value);
    }
    return widget;
  }

  widgets(value: readonly unknown[], param: string): Widget[] {
    if (value.length > MAX_WIDGETS) throw invalid(param, `must hold at most ${MAX_WIDGETS} widgets`);
    // Keys given are kept: all reserved first, so a generated key never takes one a later widget gives.
    const given = value.map((w) => (isObject(w) && typeof w.widget_key === 'string' ? w.widget_key : undefined));
    const duplicate = given.findIndex((k, i) => k !== undefined && given.indexOf(k) !== i);
    if (duplicate >= 0) throw invalid(`${param}[${duplicate}].widget_key`, 'is used by another widget');
    const taken = new Set(given.filter((k): k is string => k !== undefined));
    return value.map((w, i) => this.widget(w, `${param}[${i}]`, taken));
  }
}

/**
 * Variables checked field by field, as widgets are (each an object of a `name`, unique, and the
 * `thing_template_key` it chooses things of), with the templates they name (collected as references).
 */
export function checkVariables(
  value: readonly unknown[],
  param: string,
): { variables: Variable[]; references: Reference[] } {
  const seen = new Set<string>();
  const variables: Variable[] = [];
  const references: Reference[] = [];
  value.forEach((v, i) => {
    const at = `${param}[${i}]`;
    if (!isObject(v)) throw invalid(at, 'must be an object: {"name", "thing_template_key"}');
    onlyFields(v, ['name', 'thing_template_key'], at);
    if (v.name === undefined) throw required(`${at}.name`);
    if (typeof v.name !== 'string' || !VARIABLE_NAME_PATTERN.test(v.name)) {
      throw invalid(`${at}.name`, 'must be a letter or _ then up to 63 letters, digits or _');
    }
    if (seen.has(v.name)) throw invalid(`${at}.name`, 'is the name of another variable');
    seen.add(v.name);
    if (v.thing_template_key === undefined) throw required(`${at}.thing_template_key`);
    const key = text(v.thing_template_key, `${at}.thing_template_key`, 64, 1);
    variables.push({ name: v.name, thing_template_key: key });
    references.push({ kind: 'thing_template', key, param: `${at}.thing_template_key` });
  });
  return { variables, references };
}
