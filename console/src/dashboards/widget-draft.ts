/**
 * A widget as its form holds it, checked by the rules the API checks on Save (src/dashboards/widgets.ts,
 * docs/api.md "Dashboards"), so that Add refuses what Save would and names the form's own field; where a
 * new widget goes on the grid; and a refusal of Save told by the widget's title and place (from 1).
 * Things a widget names are looked up only by the API: one deleted meanwhile is still Save's to refuse.
 */
import type { ThingChoice } from '../components/thing-combobox.tsx';
import type { Widget, WidgetType } from './model.ts';

export type SourceKind = 'thing_keys' | 'group_key' | 'thing_template_key';

export const WITH_SOURCE: WidgetType[] = ['timeseries', 'things', 'alerts', 'map'];
export const WITH_THING: WidgetType[] = ['value', 'gauge'];
export const WITH_METRICS: WidgetType[] = ['timeseries', 'things'];
export const ALERT_STATUSES = ['open', 'acknowledged', 'cleared'] as const;
const DEFAULT_STATUSES = ['open', 'acknowledged'];

/** The API's limits (src/dashboards/widgets.ts); the form offers no more thresholds than MAX_THRESHOLDS. */
export const MAX_WIDGETS = 50;
export const MAX_THRESHOLDS = 20;
const MAX_SOURCE_THINGS = 100;
const MAX_METRICS = 8;
const MAX_TEXT_BYTES = 8 * 1024;
const KEY_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const COLOR_PATTERN = /^#[0-9a-fA-F]{6}$/;

/** A new threshold's colour, by its place: green, then orange, then red, as a value rises. */
const THRESHOLD_COLOURS = ['#15803d', '#c2410c', '#b91c1c', '#1f5fbf', '#7e22ce', '#0e7490', '#a16207', '#4d7c0f'];
export const thresholdColourFor = (index: number): string =>
  THRESHOLD_COLOURS[index % THRESHOLD_COLOURS.length] as string;

export interface WidgetDraft {
  type: WidgetType;
  title: string;
  sourceKind: SourceKind;
  /** The source's things (`$<name>` for a variable), with their names when the picker gave them. */
  things: ThingChoice[];
  /** The source's group or template. */
  sourceKey: string;
  /** A value's or a gauge's thing. */
  thing: ThingChoice[];
  metric: string;
  /** Comma-separated, as typed. */
  metrics: string;
  aggregate: string;
  unit: string;
  min: string;
  max: string;
  thresholds: { from: string; color: string }[];
  status: string[];
  text: string;
}

/** The form's fields (`thresholds.0.from`...) and what is wrong with each. */
export type Problems = Record<string, string>;

/** A widget's fields beyond its key and layout, as the API takes them. */
export type WidgetFields = Omit<Widget, 'widget_key' | 'layout'>;

const choice = (thing_key: string): ThingChoice => ({ thing_key, name: '' });

/** The form of a widget: a new one's empty fields, or an existing one's settings. */
export function draftOf(widget?: Widget): WidgetDraft {
  const source = widget?.source;
  const sourceKind: SourceKind = source?.group_key
    ? 'group_key'
    : source?.thing_template_key
      ? 'thing_template_key'
      : 'thing_keys';
  return {
    type: widget?.type ?? 'timeseries',
    title: widget?.title ?? '',
    sourceKind,
    things: (source?.thing_keys ?? []).map(choice),
    sourceKey: source?.group_key ?? source?.thing_template_key ?? '',
    thing: widget?.thing_key ? [choice(widget.thing_key)] : [],
    metric: widget?.metric ?? '',
    metrics: (widget?.metrics ?? []).join(', '),
    aggregate: widget?.aggregate ?? '',
    unit: widget?.unit ?? '',
    min: widget?.min === undefined ? '' : String(widget.min),
    max: widget?.max === undefined ? '' : String(widget.max),
    thresholds: (widget?.thresholds ?? []).map((t) => ({ from: String(t.from), color: t.color })),
    status: widget?.status ?? DEFAULT_STATUSES,
    text: widget?.text ?? '',
  };
}

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

const numberOf = (text: string): number | undefined => {
  const value = text.trim() === '' ? Number.NaN : Number(text);
  return Number.isFinite(value) ? value : undefined;
};

/** What is wrong with a thing key a widget names, as the API would say it; variables are the dashboard's. */
function thingKeyProblem(key: string, variables: readonly string[]): string | undefined {
  if (key.startsWith('$'))
    return variables.includes(key.slice(1)) ? undefined : `${key} names no variable of this dashboard`;
  return KEY_PATTERN.test(key) ? undefined : `${key} is not a thing key (1-64 characters of A-Za-z0-9._-)`;
}

/**
 * The widget the form describes, or what is wrong with it, field by field: every rule the API applies
 * to a widget's fields but the existence of the things, groups and templates it names.
 */
export function readDraft(
  draft: WidgetDraft,
  variables: readonly string[],
): { fields: WidgetFields; problems?: undefined } | { problems: Problems } {
  const problems: Problems = {};
  const { type } = draft;
  const fields: Record<string, unknown> = { type, title: draft.title.trim() };
  if (draft.title.trim() === '') problems.title = 'Give the widget a title.';
  else if (draft.title.trim().length > 200) problems.title = 'At most 200 characters.';
  if (WITH_SOURCE.includes(type)) {
    if (draft.sourceKind === 'thing_keys') {
      const keys = draft.things.map((t) => t.thing_key);
      const wrong = keys.map((k) => thingKeyProblem(k, variables)).find((p) => p !== undefined);
      if (keys.length === 0) problems.things = 'Choose at least one thing.';
      else if (keys.length > MAX_SOURCE_THINGS) problems.things = `At most ${MAX_SOURCE_THINGS} things.`;
      else if (wrong) problems.things = `${wrong}.`;
      fields.source = { thing_keys: keys };
    } else {
      if (draft.sourceKey === '')
        problems.sourceKey = `Choose a ${draft.sourceKind === 'group_key' ? 'group' : 'template'}.`;
      fields.source = { [draft.sourceKind]: draft.sourceKey };
    }
  }
  if (WITH_METRICS.includes(type)) {
    const metrics = list(draft.metrics);
    const least = type === 'timeseries' ? 1 : 0;
    if (metrics.length < least) problems.metrics = 'Name at least one metric.';
    else if (metrics.length > MAX_METRICS)
      problems.metrics = `At most ${MAX_METRICS} metrics (${metrics.length} given).`;
    else if (metrics.some((m) => m.length > 200)) problems.metrics = 'A metric name is at most 200 characters.';
    fields.metrics = metrics;
  }
  if (type === 'timeseries' && draft.aggregate) fields.aggregate = draft.aggregate;
  if (WITH_THING.includes(type)) {
    const thing = draft.thing[0]?.thing_key;
    const wrong = thing === undefined ? 'Choose a thing.' : thingKeyProblem(thing, variables);
    if (wrong) problems.thing = wrong.endsWith('.') ? wrong : `${wrong}.`;
    fields.thing_key = thing ?? '';
    const metric = draft.metric.trim();
    if (metric === '') problems.metric = 'Name the metric to show.';
    else if (metric.length > 200) problems.metric = 'At most 200 characters.';
    fields.metric = metric;
    if (draft.unit.length > 50) problems.unit = 'At most 50 characters.';
    if (draft.unit) fields.unit = draft.unit;
    let previous: number | undefined;
    const thresholds = draft.thresholds.map((t, i) => {
      const from = numberOf(t.from);
      if (from === undefined) problems[`thresholds.${i}.from`] = 'Give the value this colour starts at.';
      else if (previous !== undefined && from <= previous)
        problems[`thresholds.${i}.from`] = `Must be above the threshold before it (${previous}).`;
      if (from !== undefined) previous = from;
      if (!COLOR_PATTERN.test(t.color)) problems[`thresholds.${i}.color`] = 'Choose a colour.';
      return { from: from ?? 0, color: t.color };
    });
    if (thresholds.length > 0) fields.thresholds = thresholds;
  }
  if (type === 'gauge') {
    const min = numberOf(draft.min);
    const max = numberOf(draft.max);
    if (min === undefined) problems.min = 'Give the lowest value of the dial.';
    if (max === undefined) problems.max = 'Give the highest value of the dial.';
    else if (min !== undefined && max <= min) problems.max = `Must be above Min (${min}).`;
    fields.min = min;
    fields.max = max;
  }
  if (type === 'alerts') {
    if (draft.status.length === 0) problems.status = 'Choose at least one status.';
    // The default (open and acknowledged) is left to the API, as a widget made elsewhere may.
    const given = ALERT_STATUSES.filter((s) => draft.status.includes(s));
    if (given.join() !== DEFAULT_STATUSES.join()) fields.status = given;
  }
  if (type === 'text') {
    const bytes = new TextEncoder().encode(draft.text).length;
    if (bytes > MAX_TEXT_BYTES) problems.text = `At most 8 KiB: this is ${bytes} bytes.`;
    fields.text = draft.text;
  }
  if (Object.keys(problems).length > 0) return { problems };
  return { fields: fields as unknown as WidgetFields };
}

type Layout = Widget['layout'];

const overlap = (a: Layout, b: Layout): boolean =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/** The first place a `w` x `h` widget fits among the others: row by row from the top, each from the left. */
export function firstFreeSpot(widgets: readonly Widget[], w: number, h: number): Layout {
  const bottom = Math.max(0, ...widgets.map((widget) => widget.layout.y + widget.layout.h));
  for (let y = 0; y < bottom; y++)
    for (let x = 0; x + w <= 12; x++) {
      const spot = { x, y, w, h };
      if (!widgets.some((widget) => overlap(widget.layout, spot))) return spot;
    }
  return { x: 0, y: bottom, w, h };
}

/** A refusal of Save that names a widget: said by its place and title, with the form field it concerns. */
export interface Refusal {
  message: string;
  widgetKey?: string;
  field?: string;
  /** The API's words about the field, to show beside it in the widget's form. */
  detail?: string;
}

/** The form's field, and its label, for a widget field the API names (`thresholds[1].color`). */
function formField(path: string, sourceKind: SourceKind | undefined): { field?: string; label: string } {
  const threshold = /^thresholds\[(\d+)\]\.(from|color)$/.exec(path);
  if (threshold) {
    const i = Number(threshold[1]);
    return {
      field: `thresholds.${i}.${threshold[2]}`,
      label: `Threshold ${i + 1} ${threshold[2] === 'from' ? 'from' : 'colour'}`,
    };
  }
  const top = path.replace(/\[\d+\]$/, '');
  if (top === 'source' || top === 'source.thing_keys')
    return sourceKind === 'thing_keys' || top === 'source.thing_keys'
      ? { field: 'things', label: 'Things' }
      : { field: 'sourceKey', label: 'Source' };
  const named: Record<string, [string | undefined, string]> = {
    '': [undefined, ''],
    type: [undefined, 'Widget type'],
    widget_key: [undefined, 'Widget key'],
    title: ['title', 'Title'],
    'source.group_key': ['sourceKey', 'Group'],
    'source.thing_template_key': ['sourceKey', 'Template'],
    thing_key: ['thing', 'Thing'],
    metric: ['metric', 'Metric'],
    metrics: ['metrics', 'Metrics'],
    aggregate: [undefined, 'Aggregate'],
    unit: ['unit', 'Unit'],
    min: ['min', 'Min'],
    max: ['max', 'Max'],
    thresholds: ['thresholds', 'Thresholds'],
    status: ['status', 'Statuses'],
    text: ['text', 'Text'],
  };
  const [field, label] = named[top] ?? [undefined, top.startsWith('layout') ? 'Layout' : path];
  return field ? { field, label } : { label };
}

const WIDGET_PARAM = /^dashboard\.widgets\[(\d+)\](?:\.(\S+))? ([\s\S]*)$/;

/**
 * Save's refusal as a person reads it: `Widget 9, “Boiler now”: Thing names no known resource (b-7)`
 * rather than `dashboard.widgets[8].thing_key ...`, widgets counted from 1 as they are seen.
 */
export function describeRefusal(message: string, widgets: readonly Widget[]): Refusal {
  const match = WIDGET_PARAM.exec(message);
  if (!match) return { message };
  const index = Number(match[1]);
  const widget = widgets[index];
  const detail = match[3] ?? '';
  const source = widget?.source;
  const kind = source ? draftOf(widget).sourceKind : undefined;
  const { field, label } = formField(match[2] ?? '', kind);
  const named = widget ? `Widget ${index + 1}, “${widget.title}”` : `Widget ${index + 1}`;
  return {
    message: `${named}: ${label ? `${label} ` : ''}${detail}`,
    ...(widget ? { widgetKey: widget.widget_key } : {}),
    ...(field ? { field, detail } : {}),
  };
}
